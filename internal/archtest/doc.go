// Package archtest holds the test that enforces the import rule of
// ARCHITECTURE.md: the library packages (trajectory, classifier, recovery,
// guard, wire and their subpackages) import no collector package except
// pdata, and no component of this module.
package archtest
