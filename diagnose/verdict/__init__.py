"""Rules over metrics -> findings -> a verdict. Rule files are data (see ruleset.py)."""

from diagnose.verdict.engine import Finding, Verdict, judge
from diagnose.verdict.ruleset import CATEGORIES, RuleSet, load_rules

__all__ = ["CATEGORIES", "Finding", "RuleSet", "Verdict", "judge", "load_rules"]
