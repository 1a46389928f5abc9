package pod

// Quantity is a Kubernetes resource quantity ("500m", "1", "128Mi", "1G",
// "1e3"). The zero value is 0.
type Quantity struct {
	raw   string
	milli int64 // value in thousandths
}

// String returns the quantity as written in the manifest.
func (q Quantity) String() string { return q.raw }

// MilliValue returns the value in thousandths (CPU millicores).
func (q Quantity) MilliValue() int64 { return q.milli }

// Value returns the value rounded up to a whole number (bytes).
func (q Quantity) Value() int64 { return (q.milli + 999) / 1000 }
