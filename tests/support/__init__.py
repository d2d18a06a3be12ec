"""Test helpers shared by unit, integration and fleet tests (simulators, fixture builders)."""
