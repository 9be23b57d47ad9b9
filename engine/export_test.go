package engine

// Hooks for the external tests of package engine_test.
var ScenarioSpec = scenarioSpec

// ScenarioClock is the scenarios' clock (scenarioClock).
var ScenarioClock = scenarioClock

// WriteScenarioInputs writes a scenario run's records into its input files.
var WriteScenarioInputs = writeScenarioInputs

// PreRouted counts the batches routed with a front their decoder
// computed (preRouted), over the process: the tests that read it do not
// run in parallel.
var PreRouted = &preRouted
