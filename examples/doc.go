// Package examples holds the bundled example pipelines (one directory
// each) and the tests that run them on the real data sets and check their
// results against independent batch recomputations.
package examples
