package podvalidate

import (
	"errors"
	"strings"

	"github.com/distribution/reference"
)

// msgInvalidImageName starts the refusal of an image reference that the
// reference grammar does not read, with the reason a kubelet gives the
// container when it cannot pull it (InvalidImageName): the same reference
// is refused here, at parse time, with its file and line.
const msgInvalidImageName = "InvalidImageName: couldn't parse image name %q: %s"

// image checks the image reference ref at p (a container's image, an
// image volume's reference): required, and written in the grammar of
// docker and containerd references, which the kubelet applies before a
// pull (reference.ParseNormalizedNamed). An unrendered template
// ("{{ .Values.image }}", "<your_username>/app:v1"), a space or a capital
// in a repository is refused here rather than by a pull that never works.
func (v *validator) image(p, ref string) {
	if ref == "" {
		v.fail(p, "required")
		return
	}
	if reason := imageRefProblem(ref); reason != "" {
		v.fail(p, msgInvalidImageName, ref, reason)
	}
}

// imageRefProblem returns why ref is not an image reference, or "" when it
// is one. The reasons are the reference package's own words, without the
// reference it echoes (the refusal quotes it once, escaped).
func imageRefProblem(ref string) string {
	_, err := reference.ParseNormalizedNamed(ref)
	if err == nil {
		return ""
	}
	for _, known := range []error{
		reference.ErrReferenceInvalidFormat, reference.ErrTagInvalidFormat, reference.ErrDigestInvalidFormat,
		reference.ErrNameContainsUppercase, reference.ErrNameEmpty, reference.ErrNameTooLong,
	} {
		if errors.Is(err, known) {
			return known.Error()
		}
	}
	// The two refusals ParseNormalizedNamed words itself, with the
	// reference inside: an image ID alone, and a capital in the repository.
	if isImageID(ref) {
		return "invalid repository name, cannot specify 64-byte hexadecimal strings"
	}
	return reference.ErrReferenceInvalidFormat.Error() + ": " + reference.ErrNameContainsUppercase.Error()
}

// isImageID reports whether s is 64 lowercase hex digits: an image ID,
// which the grammar refuses as a repository name.
func isImageID(s string) bool {
	return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == ""
}
