package cli

import (
	"strings"
	"testing"
)

// TestMonitoringLine (issue 25 item 5): the line a run prints when it
// serves its metrics says when every interface reaches them.
func TestMonitoringLine(t *testing.T) {
	for _, c := range []struct {
		bound string
		every bool
	}{
		{"127.0.0.1:9464", false},
		{"[::1]:9464", false},
		{"[::]:9464", true},
		{"0.0.0.0:9464", true},
		{"10.1.2.3:9464", false},
	} {
		l := monitoringLine(c.bound)
		if !strings.HasPrefix(l, "metrics at http://"+c.bound+"/metrics, status at http://"+c.bound+"/") {
			t.Errorf("%s: %q", c.bound, l)
		}
		if got := strings.Contains(l, "on every interface of this machine (port 9464)") && strings.Contains(l, "--metrics-addr 127.0.0.1:9464"); got != c.every {
			t.Errorf("%s: every interface %v, want %v: %q", c.bound, got, c.every, l)
		}
	}
}
