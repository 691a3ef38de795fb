package squeeze_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Counters needs no metrics library, and squeeze's module graph holds
// none: the client_golang Collector lives in the module of its own at
// prometheus/, so a service that imports squeeze does not get
// client_golang (or any github.com/prometheus module) through it. Checked
// on the root module alone (GOWORK=off), as a user's build sees it: its
// module graph, and the packages its packages and tests import.
func TestCountersModuleGraphHoldsNoPrometheusModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	for _, args := range [][]string{
		{"mod", "graph"},
		{"list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}}{{end}}", "./..."},
	} {
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		for line := range strings.Lines(string(out)) {
			if strings.Contains(line, "github.com/prometheus/") {
				t.Errorf("go %s: %s", strings.Join(args, " "), strings.TrimSpace(line))
			}
		}
	}
}
