//go:build race

package nexmark

// raceOn: the race detector slows the generator about tenfold.
const raceOn = true
