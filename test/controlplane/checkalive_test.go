package controlplane

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// check_alive, polled while a cluster comes up, says a component has exited unless its recorded
// pid is that component. Between start_component's fork and its exec the pid is the forking
// shell, closing its inherited descriptors: on a loaded machine check_alive met kwok there and
// failed the e2e suite's start ("kwok exited", with an empty log).
func TestCheckAliveTellsAComponentStartingFromOneThatExited(t *testing.T) {
	script := controlPlaneScript(t)
	tests := []struct {
		name string
		// pid starts what the component's pid file names, and prints its pid
		pid       string
		wantAlive bool
	}{
		{"a shell forked to exec the component, not yet exec'd", `( sleep 1; true ) >/dev/null & echo $!`, true},
		{"no process at the pid", `( true ) >/dev/null & p=$!; wait $p; echo $p`, false},
		{"another program at the pid", `sleep 1 >/dev/null & echo $!`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := clusterDir(t)
			program := `source <(sed '/^main "\$@"$/d' "$1")
COMPONENTS=(kwok)
` + tt.pid + ` > "$2/run/kwok.pid"
if check_alive "$2"; then echo alive; else echo exited; fi
kill $(jobs -p) 2>/dev/null || true`
			out, err := exec.Command("bash", "-c", program, "bash", script, dir).Output()
			if err != nil {
				t.Fatalf("bash: %v", err)
			}
			got := strings.TrimSpace(string(out))
			if want := map[bool]string{true: "alive", false: "exited"}[tt.wantAlive]; got != want {
				t.Errorf("check_alive says %q, want %q", got, want)
			}
		})
	}
}

// stop_components kills what still runs METACEL_DOWN_TIMEOUT seconds after SIGTERM, at once
// with 0 (as the e2e tests stop their own control planes, whose directories they remove next),
// and returns once it is gone, so that its ports are free for the next. The process here ignores
// SIGTERM (a copy of sleep named kwok).
func TestStopComponentsKillsWhatOutlivesTheTimeout(t *testing.T) {
	script := controlPlaneScript(t)
	for _, timeout := range []string{"0", "1"} {
		t.Run("METACEL_DOWN_TIMEOUT="+timeout, func(t *testing.T) {
			dir := clusterDir(t)
			program := `source <(sed '/^main "\$@"$/d' "$1")
DOWN_TIMEOUT=` + timeout + `
mkdir "$2/bin" && cp "$(command -v sleep)" "$2/bin/kwok" # component_pid checks the executable's name
(trap '' TERM; exec "$2/bin/kwok" 30) >/dev/null & echo $! > "$2/run/kwok.pid"
pid=$!
stop_components "$2" kwok 2>/dev/null
state="$(ps -o stat= -p "$pid" || true)" # a zombie (Z) holds only its exit status
if [[ -z "$state" || "$state" == Z* ]]; then echo gone; else echo "running ($state)"; fi
[[ -e "$2/run/kwok.pid" ]] && echo "pid file left"
true`
			out, err := exec.Command("bash", "-c", program, "bash", script, dir).Output()
			if err != nil {
				t.Fatalf("bash: %v", err)
			}
			if got := strings.TrimSpace(string(out)); got != "gone" {
				t.Errorf("after stop_components: %q, want %q", got, "gone")
			}
		})
	}
}

// controlPlaneScript is the absolute path of hack/control-plane.sh.
func controlPlaneScript(t *testing.T) string {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "hack", "control-plane.sh"))
	if err != nil {
		t.Fatal(err)
	}
	return script
}

// clusterDir is an empty cluster directory as `up` lays it out: run/ (the pid files) and logs/.
func clusterDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"run", "logs"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
