package pod

import "testing"

func TestRestartsAfter(t *testing.T) {
	never, always := RestartNever, RestartAlways
	retry42 := []ContainerRestartRule{{Action: RestartRuleRestart, ExitCodes: &ContainerRestartRuleOnExitCodes{Operator: "In", Values: []int32{42}}}}
	notZero := []ContainerRestartRule{{Action: RestartRuleRestart, ExitCodes: &ContainerRestartRuleOnExitCodes{Operator: "NotIn", Values: []int32{0}}}}
	tests := []struct {
		name      string
		podPolicy RestartPolicy
		c         Container
		code      int
		want      bool
	}{
		{name: "pod Always", podPolicy: RestartAlways, code: 0, want: true},
		{name: "pod OnFailure, success", podPolicy: RestartOnFailure, code: 0, want: false},
		{name: "pod OnFailure, failure", podPolicy: RestartOnFailure, code: 1, want: true},
		{name: "pod Never", podPolicy: RestartNever, code: 1, want: false},
		{name: "container Never in an Always pod", podPolicy: RestartAlways, c: Container{RestartPolicy: &never}, code: 1, want: false},
		{name: "container Always in a Never pod", podPolicy: RestartNever, c: Container{RestartPolicy: &always}, code: 0, want: true},
		{name: "rule In matches", podPolicy: RestartAlways, c: Container{RestartPolicy: &never, RestartPolicyRules: retry42}, code: 42, want: true},
		{name: "rule In misses: the policy", podPolicy: RestartAlways, c: Container{RestartPolicy: &never, RestartPolicyRules: retry42}, code: 1, want: false},
		{name: "rule NotIn matches", podPolicy: RestartNever, c: Container{RestartPolicy: &never, RestartPolicyRules: notZero}, code: 3, want: true},
		{name: "rule NotIn misses", podPolicy: RestartNever, c: Container{RestartPolicy: &never, RestartPolicyRules: notZero}, code: 0, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.RestartsAfter(tt.podPolicy, tt.code); got != tt.want {
				t.Errorf("RestartsAfter(%s, %d) = %v, want %v", tt.podPolicy, tt.code, got, tt.want)
			}
		})
	}
}
