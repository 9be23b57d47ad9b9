package engine

// Hooks for the external tests of package engine_test.
var ScenarioSpec = scenarioSpec

// ScenarioClock is the scenarios' clock (scenarioClock).
var ScenarioClock = scenarioClock

// WriteScenarioInputs writes a scenario run's records into its input files.
var WriteScenarioInputs = writeScenarioInputs
