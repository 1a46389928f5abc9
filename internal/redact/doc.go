// Package redact owns how a secret is hidden before anything is logged,
// shown or used as a name: a URL's user information and query values.
//
// It imports only the standard library and no internal package, so every
// package may use it.
package redact
