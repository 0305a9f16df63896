//go:build !race

package main

// raceDetector: the race detector is on; its shadow memory makes a
// process's RSS no measure of what podsup itself holds.
const raceDetector = false
