"""Renders the promtool test templates (alerts/tests/*.yml) for one configuration."""

import json
import re

PLACEHOLDER = re.compile(r"@([a-z_]+)(?::([^@\s]+))?@")


def render(template, cfg, name):
    def value(m):
        key, arg = m.group(1), m.group(2)
        if key == "target":
            return ",".join(f'{k}={json.dumps(v)}' for k, v in cfg.sample.items())
        if key == "target_labels":
            return ", ".join(f"{k}: {json.dumps(v)}" for k, v in cfg.sample.items())
        if key == "job":
            return cfg.sample["job"]
        if key == "runbook_base":
            return cfg.runbook_url_base
        if key == "severity" and arg:
            return "critical" if cfg.is_critical(arg) else "warning"
        raise ValueError(f"{name}: unknown placeholder {m.group(0)}")

    # Comment lines explain the placeholders; only the YAML is rendered.
    return "".join(line if line.lstrip().startswith("#") else PLACEHOLDER.sub(value, line)
                   for line in template.splitlines(keepends=True))
