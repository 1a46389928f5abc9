package pod

import (
	"encoding/json"
	"testing"
)

func TestIntOrStringJSON(t *testing.T) {
	for _, tc := range []struct {
		in   IntOrString
		json string
	}{
		{FromInt(8080), `8080`},
		{FromString("http"), `"http"`},
	} {
		b, err := json.Marshal(tc.in)
		if err != nil || string(b) != tc.json {
			t.Errorf("Marshal(%v) = %s, %v; want %s", tc.in, b, err, tc.json)
		}
		var back IntOrString
		if err := json.Unmarshal(b, &back); err != nil || back != tc.in {
			t.Errorf("Unmarshal(%s) = %+v, %v; want %+v", b, back, err, tc.in)
		}
	}
}

func TestResolvePort(t *testing.T) {
	ports := []ContainerPort{{Name: "http", ContainerPort: 8080}}
	for _, tc := range []struct {
		in   IntOrString
		want int32
		ok   bool
	}{
		{FromInt(80), 80, true},
		{FromString("http"), 8080, true},
		{FromString("grpc"), 0, false},
	} {
		if got, ok := ResolvePort(tc.in, ports); got != tc.want || ok != tc.ok {
			t.Errorf("ResolvePort(%v) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
