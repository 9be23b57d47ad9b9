// Package cputime reads the process's CPU time (user + system), which the
// runners report in their summaries (engine.Summary.CPU) beside the wall
// time: a helper of no layer, below the engine and the group runner.
package cputime
