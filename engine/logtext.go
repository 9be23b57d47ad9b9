package engine

import "fmt"

// Texts of log lines: what a log line shows is read by people, never a
// Go value's default rendering (map[…], "1 tasks").

// count renders n things: "1 task", "3 tasks" (plural adds "s").
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
