"""Optimisation: choose a new thread geometry (permutation ILPs solved with pulp)."""
