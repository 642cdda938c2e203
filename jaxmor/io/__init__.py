"""Readers of robot descriptions (URDF, actuator files)."""
