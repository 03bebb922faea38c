"""Writes rule groups as a Prometheus rule file: YAML with a comment above each rule."""

import textwrap

import yaml

WIDTH = 100


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper, s):
    # Multi-line expressions as literal blocks (newlines kept); long texts folded at spaces.
    if "\n" in s:
        return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|")
    if len(s) > 60 and " " in s:
        return dumper.represent_scalar("tag:yaml.org,2002:str", s, style=">")
    return dumper.represent_scalar("tag:yaml.org,2002:str", s)


_Dumper.add_representer(str, _str)


def comment_lines(text, indent):
    prefix = " " * indent + "# "
    return [prefix + line for line in textwrap.wrap(text, WIDTH - len(prefix))]


def dump_rule(rule, indent):
    body = yaml.dump([rule], Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                     width=WIDTH, default_flow_style=False)
    return [" " * indent + line if line else line for line in body.rstrip("\n").split("\n")]


def render(header, groups):
    """header: comment text (with its '#'); groups: [(name, comment, [rule])]."""
    lines = [header.rstrip("\n"), "", "groups:"]
    plain = []
    for gi, (name, comment, rules) in enumerate(groups):
        if gi:
            lines.append("")
        if comment:
            lines += comment_lines(comment, 2)
        lines += [f"  - name: {name}", "    rules:"]
        group_plain = []
        for ri, rule in enumerate(rules):
            rule = dict(rule)
            note = rule.pop("comment", None)
            if ri and note:
                lines.append("")
            if note:
                lines += comment_lines(note, 6)
            lines += dump_rule(rule, 6)
            group_plain.append(rule)
        plain.append({"name": name, "rules": group_plain})
    text = "\n".join(lines) + "\n"
    # The emitter's folding must not change a single character of what Prometheus reads.
    if yaml.safe_load(text) != {"groups": plain}:
        raise AssertionError("the rule file does not read back as the rules it was made from")
    return text
