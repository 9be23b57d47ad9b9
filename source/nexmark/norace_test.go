//go:build !race

package nexmark

const raceOn = false
