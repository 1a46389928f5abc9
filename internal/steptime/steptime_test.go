package steptime

import (
	"context"
	"testing"
	"time"
)

func TestSteps(t *testing.T) {
	tests := []struct {
		name  string
		steps []string
		want  []string // keys in order, "total" last
	}{
		{"none", nil, []string{"total"}},
		{"in order", []string{"a", "b", "c"}, []string{"a", "b", "c", "total"}},
		{"a step again adds to its entry", []string{"a", "b", "a"}, []string{"a", "b", "total"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm := New()
			for _, s := range tt.steps {
				time.Sleep(time.Millisecond)
				tm.Step(s)
			}
			attrs := tm.Attrs()
			if len(attrs) != 2*len(tt.want) {
				t.Fatalf("Attrs() = %v, want keys %v", attrs, tt.want)
			}
			var sum time.Duration
			for i, k := range tt.want {
				if attrs[2*i] != k {
					t.Errorf("key %d = %v, want %s", i, attrs[2*i], k)
				}
				d := attrs[2*i+1].(time.Duration)
				if k != "total" {
					if d < time.Millisecond {
						t.Errorf("step %s took %v, want at least 1ms", k, d)
					}
					sum += d
				} else if d < sum {
					t.Errorf("total %v is less than the steps' sum %v", d, sum)
				}
			}
		})
	}
}

func TestContext(t *testing.T) {
	if From(context.Background()) != nil {
		t.Fatal("a context without a timer gave one")
	}
	From(context.Background()).Step("nothing") // a nil timer marks nothing
	if From(context.Background()).Attrs() != nil {
		t.Fatal("a nil timer has attributes")
	}
	tm := New()
	if got := From(With(context.Background(), tm)); got != tm {
		t.Fatalf("From(With(t)) = %p, want %p", got, tm)
	}
}
