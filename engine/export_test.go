package engine

// Hooks for the external tests of package engine_test.
var ScenarioSpec = scenarioSpec

// ScenarioClock is the scenarios' clock (scenarioClock).
var ScenarioClock = scenarioClock
