"""The stagewatch mixin: rules and dashboards generated from one configuration (generate.py)."""
