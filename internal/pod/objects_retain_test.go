package pod

import "testing"

// TestObjectRetain: a claim's retention is part of the bound objects'
// digest (a change syncs the pod, which updates the claim's mark) and of
// Equal; a claim that is not retained keeps the digest it always had.
func TestObjectRetain(t *testing.T) {
	p := &Pod{Metadata: ObjectMeta{Name: "db-pod", Namespace: "default"}, Spec: PodSpec{Volumes: []Volume{
		{Name: "data", PersistentVolumeClaim: &PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}},
	}}}
	claim := func(retain bool) *Object {
		return &Object{Kind: KindClaim, Namespace: "default", Name: "data-db-0", Retain: retain}
	}
	digest := func(o *Object) string {
		_, d := Bind(p, func(ObjectKey) *Object { return o })
		return d
	}
	tests := []struct {
		name           string
		a, b           *Object
		wantEqual      bool
		wantSameDigest bool
	}{
		{"both retained", claim(true), claim(true), true, true},
		{"both deleted", claim(false), claim(false), true, true},
		{"retention changed", claim(true), claim(false), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.Equal(tt.b); got != tt.wantEqual {
				t.Errorf("Equal = %v, want %v", got, tt.wantEqual)
			}
			if got := digest(tt.a) == digest(tt.b); got != tt.wantSameDigest {
				t.Errorf("same digest = %v, want %v", got, tt.wantSameDigest)
			}
		})
	}
}
