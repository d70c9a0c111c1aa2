"""Renderings of an analysis: findings (diagnostics), text, JSON, SARIF."""
