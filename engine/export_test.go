package engine

// Hooks for the external tests of package engine_test.
var ScenarioSpec = scenarioSpec
