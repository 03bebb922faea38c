#!/usr/bin/env python3
"""Lints Grafana dashboards (JSON model) for the Prometheus / monitoring-mixin conventions.

Implements, in the Python standard library, the rule set of grafana/dashboard-linter (as a
reference; not its code) plus checks of this project:

  json-parse-rule                  every file is valid JSON holding one dashboard object
  no-inputs-rule                   no `__inputs` (no export-for-sharing placeholders)
  uid-rule                         a stable uid: [A-Za-z0-9_-]{1,40}, unique across the files
  dashboard-title-rule             the dashboard has a title
  tags-rule                        the dashboard has tags
  template-datasource-rule         a `datasource` variable of type datasource, query prometheus
  template-job-rule                a `job` query variable: $datasource, multi, includeAll, allValue .+
  template-instance-rule           the same for `instance`
  template-pipeline-stage-rule     `pipeline_stage` defined where used; allValue .+ with includeAll
  template-pipeline-rule           `pipeline` (an optional label) multi, includeAll, allValue .*
  template-current-rule            every variable has a current value (text and value)
  template-on-time-change-reload-rule  query variables refresh on time range change (2)
  template-label-promql-rule       query variables are label_values(...)/... with valid PromQL
  template-undefined-variable-rule every $variable in a query is defined
  annotation-builtin-rule          the built-in "Annotations & Alerts" entry is in the list
  annotation-target-rule           a Prometheus annotation's query is in target.expr (the
                                   current form), not in a top-level expr
  panel-id-rule                    every panel has an id, unique in its dashboard
  panel-datasource-rule            panels, targets and annotations use the templated datasource
  panel-title-description-rule     every panel has a title and a description (rows a title)
  panel-units-rule                 every panel has a valid unit
  panel-no-targets-rule            every non-row panel has a query
  panel-heatmap-rule               heatmaps read `_bucket` series with format heatmap
  target-promql-rule               each query is valid PromQL (parsed here: syntax, functions,
                                   argument types, balanced brackets and quotes)
  target-rate-interval-rule        rate()/irate() ranges are $__rate_interval
  target-job-rule                  every selector has job=~"$job"
  target-instance-rule             every selector has instance=~"$instance"
  target-counter-agg-rule          `_total` series only directly inside rate/irate/increase

Usage:
  lint.py FILE...          exit 1 and print FILE:PANEL:RULE:MESSAGE for each violation
  lint.py --self-test      check that every rule catches a known-bad dashboard
"""

import copy
import io
import json
import os
import re
import sys
import tempfile

# ---- PromQL ------------------------------------------------------------------------------


class PromQLError(Exception):
    pass


KEYWORDS_BINOP = {"and", "or", "unless", "atan2"}
AGGREGATORS = {"sum", "avg", "count", "min", "max", "group", "stddev", "stdvar", "topk",
               "bottomk", "count_values", "quantile", "limitk", "limit_ratio"}
AGG_PARAM = {"topk": "scalar", "bottomk": "scalar", "quantile": "scalar",
             "count_values": "string", "limitk": "scalar", "limit_ratio": "scalar"}

V, M, S, STR = "vector", "matrix", "scalar", "string"
# name → (argument types, number of optional trailing args, variadic?, return type)
_MATH = ["abs", "ceil", "exp", "floor", "ln", "log10", "log2", "sqrt", "sgn", "acos", "acosh",
         "asin", "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan", "tanh", "deg",
         "rad", "timestamp", "sort", "sort_desc", "absent", "histogram_count", "histogram_sum"]
_OVER_TIME = ["avg_over_time", "min_over_time", "max_over_time", "sum_over_time",
              "count_over_time", "stddev_over_time", "stdvar_over_time", "last_over_time",
              "present_over_time", "absent_over_time", "changes", "delta", "deriv", "idelta",
              "increase", "irate", "rate", "resets"]
_DATE = ["day_of_month", "day_of_week", "day_of_year", "days_in_month", "hour", "minute",
         "month", "year"]
FUNCTIONS = {}
for _f in _MATH:
    FUNCTIONS[_f] = ([V], 0, False, V)
for _f in _OVER_TIME:
    FUNCTIONS[_f] = ([M], 0, False, V)
for _f in _DATE:
    FUNCTIONS[_f] = ([V], 1, False, V)
FUNCTIONS.update({
    "quantile_over_time": ([S, M], 0, False, V),
    "predict_linear": ([M, S], 0, False, V),
    "holt_winters": ([M, S, S], 0, False, V),
    "clamp": ([V, S, S], 0, False, V),
    "clamp_max": ([V, S], 0, False, V),
    "clamp_min": ([V, S], 0, False, V),
    "round": ([V, S], 1, False, V),
    "histogram_quantile": ([S, V], 0, False, V),
    "histogram_fraction": ([S, S, V], 0, False, V),
    "label_replace": ([V, STR, STR, STR, STR], 0, False, V),
    "label_join": ([V, STR, STR, STR], 1, True, V),
    "scalar": ([V], 0, False, S),
    "vector": ([S], 0, False, V),
    "time": ([], 0, False, S),
    "pi": ([], 0, False, S),
})

DURATION_RE = re.compile(r"^(\d+(ms|[smhdwy]))+$")
VARIABLE_RE = re.compile(r"\$\{([^}]+)\}|\[\[([^\]]+)\]\]|\$([A-Za-z_][A-Za-z0-9_]*)")

_TOKEN_RE = re.compile(r"""
    (?P<ws>\s+|\#[^\n]*)
  | (?P<var>\$\{[^}]+\}|\[\[[^\[\]]+\]\]|\$[A-Za-z_][A-Za-z0-9_]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`[^`]*`)
  | (?P<duration>\d+(?:ms|[smhdwy])(?:\d+(?:ms|[smhdwy]))*(?![A-Za-z0-9_.]))
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<op>==|!=|<=|>=|=~|!~|[-+*/%^<>=(){}\[\],:@])
""", re.VERBOSE)


class Tok:
    def __init__(self, kind, text, pos):
        self.kind, self.text, self.pos = kind, text, pos

    def __repr__(self):
        return f"{self.kind}:{self.text}"


def tokenize(expr):
    toks, pos = [], 0
    while pos < len(expr):
        if expr[pos] == ":" and toks and toks[-1].kind in ("duration", "var", "number"):
            toks.append(Tok("op", ":", pos))  # a subquery's [range:step], not a metric name
            pos += 1
            continue
        m = _TOKEN_RE.match(expr, pos)
        if not m:
            ch = expr[pos]
            if ch in "\"'`":
                raise PromQLError(f"unterminated quoted string at position {pos}")
            raise PromQLError(f"unexpected character {ch!r} at position {pos}")
        kind = m.lastgroup
        if kind != "ws":
            toks.append(Tok(kind, m.group(), pos))
        pos = m.end()
    toks.append(Tok("eof", "", pos))
    return toks


def check_balance(expr):
    """Brackets and quotes, reported plainly before the parser's more detailed errors."""
    stack, quote, i = [], None, 0
    pairs = {")": "(", "]": "[", "}": "{"}
    while i < len(expr):
        c = expr[i]
        if quote:
            if c == "\\" and quote != "`":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "\"'`":
            quote = c
        elif c in "([{":
            stack.append((c, i))
        elif c in ")]}":
            if not stack or stack[-1][0] != pairs[c]:
                raise PromQLError(f"unbalanced {c!r} at position {i}")
            stack.pop()
        i += 1
    if quote:
        raise PromQLError(f"unterminated {quote} string")
    if stack:
        raise PromQLError(f"unclosed {stack[-1][0]!r} at position {stack[-1][1]}")


class Node:
    def __init__(self, kind, type_, **kw):
        self.kind, self.type = kind, type_
        self.children = []
        self.__dict__.update(kw)


def unquote(text):
    if text[0] == "`":
        return text[1:-1]
    body = text[1:-1]
    out, i = [], 0
    escapes = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a",
               "b": "\b", "f": "\f", "v": "\v"}
    while i < len(body):
        c = body[i]
        if c == "\\":
            if i + 1 >= len(body):
                raise PromQLError(f"bad escape at end of {text}")
            n = body[i + 1]
            if n in escapes:
                out.append(escapes[n])
                i += 2
            elif n in "xuU01234567":
                out.append("?")
                i += 2
            else:
                raise PromQLError(f"unknown escape sequence \\{n} in {text}")
        else:
            out.append(c)
            i += 1
    return "".join(out)


class Parser:
    def __init__(self, expr):
        check_balance(expr)
        self.toks = tokenize(expr)
        self.i = 0

    def peek(self, k=0):
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def accept(self, text):
        if self.peek().text == text and self.peek().kind in ("op", "ident"):
            return self.next()
        return None

    def expect(self, text):
        t = self.next()
        if t.text != text or t.kind not in ("op", "ident"):
            raise PromQLError(f"expected {text!r} at position {t.pos}, found {t.text or 'end'!r}")
        return t

    def parse(self):
        node = self.expr(0)
        if self.peek().kind != "eof":
            t = self.peek()
            raise PromQLError(f"unexpected {t.text!r} at position {t.pos}")
        return node

    # precedence climbing
    LEVELS = [{"or"}, {"and", "unless"}, {"==", "!=", "<=", "<", ">=", ">"}, {"+", "-"},
              {"*", "/", "%", "atan2"}, {"^"}]

    def expr(self, level):
        if level == len(self.LEVELS):
            return self.unary()
        left = self.expr(level + 1)
        while True:
            t = self.peek()
            if t.kind not in ("op", "ident") or t.text not in self.LEVELS[level]:
                return left
            if t.kind == "ident" and t.text not in KEYWORDS_BINOP:
                return left
            self.next()
            op = t.text
            is_bool = bool(self.accept("bool"))
            if is_bool and op not in self.LEVELS[2]:
                raise PromQLError(f"bool modifier only on comparisons, not {op!r}")
            if self.peek().text in ("on", "ignoring"):
                self.next()
                self.label_list()
                if self.peek().text in ("group_left", "group_right"):
                    self.next()
                    if self.peek().text == "(":
                        self.label_list()
            # ^ is right-associative
            right = self.expr(level) if op == "^" else self.expr(level + 1)
            left = self.binary(op, left, right, is_bool)

    def binary(self, op, left, right, is_bool):
        for side in (left, right):
            if side.type not in (S, V):
                raise PromQLError(f"binary operator {op!r} needs scalars or instant vectors, "
                                  f"got a {side.type}")
        if op in ("and", "or", "unless") and (left.type == S or right.type == S):
            raise PromQLError(f"set operator {op!r} not allowed with a scalar")
        if op in self.LEVELS[2] and left.type == S and right.type == S and not is_bool:
            raise PromQLError("comparisons between scalars must use the bool modifier")
        n = Node("binary", V if V in (left.type, right.type) else S, op=op)
        n.children = [left, right]
        return n

    def unary(self):
        if self.peek().text in ("-", "+") and self.peek().kind == "op":
            op = self.next().text
            operand = self.expr(len(self.LEVELS) - 1)  # binds looser than ^
            if operand.type not in (S, V):
                raise PromQLError(f"unary {op} needs a scalar or instant vector")
            n = Node("unary", operand.type, op=op)
            n.children = [operand]
            return n
        return self.postfix(self.primary())

    def label_list(self):
        self.expect("(")
        labels = []
        while self.peek().text != ")":
            t = self.next()
            if t.kind != "ident" or ":" in t.text:
                raise PromQLError(f"expected a label name at position {t.pos}, found {t.text!r}")
            labels.append(t.text)
            if not self.accept(","):
                break
        self.expect(")")
        return labels

    def duration(self):
        t = self.next()
        if t.kind == "duration":
            return ("duration", t.text)
        if t.kind == "var":
            return ("var", variable_name(t.text))
        if t.kind == "number" and re.fullmatch(r"\d+", t.text):
            return ("duration", t.text + "s")
        raise PromQLError(f"expected a duration at position {t.pos}, found {t.text or 'end'!r}")

    def postfix(self, node):
        while True:
            t = self.peek()
            if t.text == "[" and t.kind == "op":
                self.next()
                rng = self.duration()
                if self.accept(":"):
                    step = None if self.peek().text == "]" else self.duration()
                    self.expect("]")
                    if node.type != V:
                        raise PromQLError("subquery is only allowed on an instant vector")
                    n = Node("subquery", M, range=rng, step=step)
                    n.children = [node]
                    node = n
                else:
                    self.expect("]")
                    if node.kind != "selector":
                        raise PromQLError("ranges are only allowed on vector selectors")
                    n = Node("matrix", M, range=rng)
                    n.children = [node]
                    node = n
            elif t.text == "offset" and t.kind == "ident":
                self.next()
                self.accept("-")
                self.duration()
                if node.kind not in ("selector", "matrix", "subquery"):
                    raise PromQLError("offset modifier must follow a selector or subquery")
            elif t.text == "@" and t.kind == "op":
                self.next()
                nt = self.next()
                if nt.text in ("start", "end"):
                    self.expect("(")
                    self.expect(")")
                elif nt.kind not in ("number", "var"):
                    raise PromQLError(f"expected a timestamp after @ at position {nt.pos}")
                if node.kind not in ("selector", "matrix", "subquery"):
                    raise PromQLError("@ modifier must follow a selector or subquery")
            else:
                return node

    def primary(self):
        t = self.peek()
        if t.kind == "number":
            self.next()
            return Node("number", S)
        if t.kind == "var":  # a template variable in expression position: a scalar
            self.next()
            return Node("number", S, var=variable_name(t.text))
        if t.kind == "string":
            self.next()
            unquote(t.text)
            return Node("string", STR)
        if t.kind == "duration":
            raise PromQLError(f"unexpected duration {t.text!r} at position {t.pos}")
        if t.kind == "op" and t.text == "(":
            self.next()
            inner = self.expr(0)
            self.expect(")")
            n = Node("paren", inner.type)
            n.children = [inner]
            return n
        if t.kind == "op" and t.text == "{":
            return self.selector(None)
        if t.kind == "ident" and t.text.lower() in ("inf", "nan"):
            self.next()
            return Node("number", S)
        if t.kind == "ident":
            name = t.text
            if name in AGGREGATORS and self.peek(1).text in ("(", "by", "without"):
                return self.aggregation()
            if self.peek(1).text == "(" and self.peek(1).kind == "op":
                return self.call()
            if name in ("by", "without", "on", "ignoring", "group_left", "group_right",
                        "bool", "offset") or name in KEYWORDS_BINOP:
                raise PromQLError(f"unexpected keyword {name!r} at position {t.pos}")
            self.next()
            return self.selector(name)
        raise PromQLError(f"unexpected {t.text or 'end of query'!r} at position {t.pos}")

    def selector(self, name):
        matchers = []
        if self.accept("{"):
            while self.peek().text != "}":
                lt = self.next()
                if lt.kind != "ident" or ":" in lt.text:
                    raise PromQLError(f"expected a label name at position {lt.pos}, "
                                      f"found {lt.text!r}")
                op = self.next()
                if op.text not in ("=", "!=", "=~", "!~"):
                    raise PromQLError(f"expected a label matcher operator at position {op.pos}")
                vt = self.next()
                if vt.kind != "string":
                    raise PromQLError(f"expected a quoted label value at position {vt.pos}")
                value = unquote(vt.text)
                if op.text in ("=~", "!~") and not VARIABLE_RE.search(value):
                    try:
                        re.compile(value)
                    except re.error as e:
                        raise PromQLError(f"invalid regular expression {value!r}: {e}")
                matchers.append((lt.text, op.text, value))
                if not self.accept(","):
                    break
            self.expect("}")
        if name is None and all(matches_empty(o, v) for _, o, v in matchers):
            raise PromQLError("vector selector must contain at least one non-empty matcher")
        return Node("selector", V, name=name, matchers=matchers)

    def aggregation(self):
        op = self.next().text
        grouping = None
        if self.peek().text in ("by", "without"):
            self.next()
            grouping = self.label_list()
        self.expect("(")
        args = []
        if self.peek().text != ")":
            args.append(self.expr(0))
            while self.accept(","):
                args.append(self.expr(0))
        self.expect(")")
        if self.peek().text in ("by", "without"):
            if grouping is not None:
                raise PromQLError(f"{op}: grouping given twice")
            self.next()
            self.label_list()
        want = ([AGG_PARAM[op]] if op in AGG_PARAM else []) + [V]
        if len(args) != len(want):
            raise PromQLError(f"{op} takes {len(want)} argument(s), got {len(args)}")
        for a, w in zip(args, want):
            if a.type != w:
                raise PromQLError(f"{op}: expected a {w} argument, got a {a.type}")
        n = Node("aggregation", V, op=op)
        n.children = args
        return n

    def call(self):
        t = self.next()
        name = t.text
        if name not in FUNCTIONS:
            raise PromQLError(f"unknown function {name!r} at position {t.pos}")
        self.expect("(")
        args = []
        if self.peek().text != ")":
            args.append(self.expr(0))
            while self.accept(","):
                args.append(self.expr(0))
        self.expect(")")
        types, optional, variadic, ret = FUNCTIONS[name]
        lo = len(types) - optional
        if len(args) < lo or (len(args) > len(types) and not variadic):
            raise PromQLError(f"{name}() takes {lo}"
                              f"{'' if lo == len(types) else '-' + str(len(types))}"
                              f"{'+' if variadic else ''} argument(s), got {len(args)}")
        for i, a in enumerate(args):
            want = types[min(i, len(types) - 1)]
            if a.type != want:
                raise PromQLError(f"{name}(): argument {i + 1} must be a {want}, got a {a.type}")
        n = Node("call", ret, func=name)
        n.children = args
        return n


def matches_empty(op, value):
    """Whether a matcher matches the empty label value (a template variable: assume not)."""
    if VARIABLE_RE.search(value):
        return False
    if op == "=":
        return value == ""
    if op == "!=":
        return value != ""
    hit = re.fullmatch(value, "") is not None
    return hit if op == "=~" else not hit


def variable_name(text):
    m = VARIABLE_RE.fullmatch(text)
    name = m.group(1) or m.group(2) or m.group(3)
    return name.split(":", 1)[0]


def parse_promql(expr):
    if not isinstance(expr, str) or not expr.strip():
        raise PromQLError("empty query")
    return Parser(expr).parse()


def walk(node, parents=()):
    yield node, parents
    for c in node.children:
        yield from walk(c, parents + (node,))


def variables_in(expr):
    return {variable_name(m.group()) for m in VARIABLE_RE.finditer(expr)}


# ---- dashboards ----------------------------------------------------------------------------

VALID_UNITS = set("""
none string short percent percentunit humidity dB hex0x hex sci locale pixel
accMS2 accFS2 accG degree radian grad arcmin arcsec areaM2 areaF2 areaMI2
flops mflops gflops tflops pflops eflops zflops yflops
ppm conppb conngm3 conngNm3 conμgm3 conμgNm3 conmgm3 conmgNm3 congm3 congNm3 conmgdL conmmolL
currencyUSD currencyGBP currencyEUR currencyJPY currencyRUB currencyUAH currencyBRL currencyDKK
currencyISK currencyNOK currencySEK currencyCZK currencyCHF currencyPLN currencyBTC currencymBTC
currencyμBTC currencyZAR currencyINR currencyKRW currencyIDR currencyPHP currencyVND
bytes decbytes bits decbits kbytes deckbytes mbytes decmbytes gbytes decgbytes tbytes dectbytes
pbytes decpbytes
pps binBps Bps binbps bps KiBs Kibits KBs Kbits MiBs Mibits MBs Mbits GiBs Gibits GBs Gbits TiBs
Tibits TBs Tbits PiBs Pibits PBs Pbits
dateTimeAsIso dateTimeAsIsoNoDateIfToday dateTimeAsUS dateTimeAsUSNoDateIfToday dateTimeAsLocal
dateTimeAsLocalNoDateIfToday dateTimeAsSystem dateTimeFromNow
watt kwatt megwatt gwatt mwatt Wm2 voltamp kvoltamp voltampreact kvoltampreact watth watthperkg
kwatth kwattm amph kamph mamph joule ev amp kamp mamp volt kvolt mvolt dBm ohm kohm Mohm farad
µfarad nfarad pfarad ffarad henry mhenry µhenry lumens
flowgpm flowcms flowcfs flowcfm litreh flowlpm flowmlpm lux forceNm forcekNm forceN forcekN
Hs KHs MHs GHs THs PHs EHs massmg massg masslb masskg masst
lengthmm lengthin lengthft lengthm lengthkm lengthmi
pressurembar pressurebar pressurekbar pressurepa pressurehpa pressurekpa pressurehg pressurepsi
radbq radci radgy radrad radsv radmsv radusv radrem radexpckg radr radsvh radmsvh radusvh
rotrpm rothz rotrads rotdegs celsius fahrenheit kelvin
hertz ns µs ms s m h d dtdurationms dtdurations dthms dtdhms timeticks clockms clocks
cps ops reqps rps wps iops cpm opm rpm wpm
velocityms velocitykmh velocitymph velocityknot mlitre litre m3 Nm3 dm3 gallons
bool bool_yes_no bool_on_off
""".split())

UNIT_PANELS = {"stat", "singlestat", "graph", "table", "timeseries", "gauge", "heatmap",
               "bargauge"}
BUILTIN_VARIABLES = {"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s",
                     "__range_ms", "__dashboard", "__from", "__to", "__name", "__org",
                     "__user", "timeFilter", "__timeFilter", "__auto_interval"}
TEMPLATED_DS = {"$datasource", "${datasource}"}
UID_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


class Linter:
    def __init__(self):
        self.violations = []

    def add(self, file, panel, rule, message):
        self.violations.append((file, panel, rule, message))

    # -- files --

    def lint_file(self, path):
        try:
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            self.add(path, "-", "json-parse-rule", f"not valid JSON: {e}")
            return None
        if not isinstance(d, dict) or not isinstance(d.get("panels", []), list):
            self.add(path, "-", "json-parse-rule", "not a Grafana dashboard object")
            return None
        self.lint_dashboard(path, d)
        return d

    def lint_files(self, paths):
        uids = {}
        for path in paths:
            d = self.lint_file(path)
            if d and isinstance(d.get("uid"), str):
                if d["uid"] in uids:
                    self.add(path, "-", "uid-rule",
                             f"uid {d['uid']!r} is also the uid of {uids[d['uid']]}")
                uids.setdefault(d["uid"], path)

    # -- dashboard --

    def lint_dashboard(self, f, d):
        if "__inputs" in d:
            self.add(f, "-", "no-inputs-rule",
                     "has __inputs (an export for sharing); use the datasource variable instead")
        uid = d.get("uid")
        if not isinstance(uid, str) or not UID_RE.match(uid):
            self.add(f, "-", "uid-rule", f"uid must be a stable [A-Za-z0-9_-]{{1,40}} string, "
                                         f"is {uid!r}")
        if not isinstance(d.get("title"), str) or not d["title"].strip():
            self.add(f, "-", "dashboard-title-rule", "the dashboard has no title")
        tags = d.get("tags")
        if not isinstance(tags, list) or not tags or not all(isinstance(t, str) and t
                                                             for t in tags):
            self.add(f, "-", "tags-rule", f"the dashboard needs a non-empty list of tags, has "
                                          f"{tags!r}")
        templates = d.get("templating", {}).get("list", []) or []
        by_name = {t.get("name"): t for t in templates if isinstance(t, dict)}
        self.lint_templates(f, d, templates, by_name)

        panels = list(iter_panels(d.get("panels", [])))
        ids = {}
        for p in panels:
            title = p.get("title") or f"<panel id {p.get('id')}>"
            pid = p.get("id")
            if not isinstance(pid, int):
                self.add(f, title, "panel-id-rule", f"panel id must be an integer, is {pid!r}")
            elif pid in ids:
                self.add(f, title, "panel-id-rule",
                         f"panel id {pid} is also the id of panel {ids[pid]!r}")
            else:
                ids[pid] = title
            self.lint_panel(f, d, p, title, by_name)

        annotations = d.get("annotations", {}).get("list", []) or []
        if not any(a.get("builtIn") == 1 and a.get("name") == "Annotations & Alerts"
                   for a in annotations):
            self.add(f, "-", "annotation-builtin-rule",
                     'the built-in "Annotations & Alerts" annotation is missing')
        for a in annotations:
            if a.get("builtIn") == 1:
                continue
            where = f"annotation {a.get('name', '?')}"
            if datasource_uid(a.get("datasource")) not in TEMPLATED_DS:
                self.add(f, where, "panel-datasource-rule",
                         f"annotation does not use the templated datasource, uses "
                         f"{a.get('datasource')!r}")
            if "expr" in a:
                self.add(f, where, "annotation-target-rule",
                         "the query is in a top-level expr (the old form); put it in "
                         "target.expr with a refId")
            tgt = a.get("target") if isinstance(a.get("target"), dict) else {}
            if "expr" in a or "expr" in tgt or a.get("datasource", {}).get("type") == "prometheus":
                if tgt and not tgt.get("refId"):
                    self.add(f, where, "annotation-target-rule", "target has no refId")
                self.lint_expr(f, where, tgt.get("expr", a.get("expr", "")), by_name)

        used = set()
        for _, expr in all_exprs(d):
            used |= variables_in(expr)
        # name → rule, label, multi-select required, allValue (pipeline is optional on a
        # stage, so its All must match series without it).
        for name, rule, label, multi, all_value in (
                ("pipeline", "template-pipeline-rule", "Pipeline", True, ".*"),
                ("pipeline_stage", "template-pipeline-stage-rule", "Pipeline stage", False, ".+")):
            if name not in used:
                continue
            t = by_name.get(name)
            if t is None:
                self.add(f, "-", rule, f"queries use ${name} but there is no {name} variable")
            else:
                self.check_query_variable(f, t, rule, label, require_multi=multi,
                                          all_value=all_value)

    def lint_templates(self, f, d, templates, by_name):
        ds = [t for t in templates if t.get("type") == "datasource"]
        if not ds:
            self.add(f, "-", "template-datasource-rule", "has no templated data source variable")
        for t in ds:
            q = str(t.get("query", ""))
            names = {f"{q.lower()}_datasource"} | ({"datasource"} if len(ds) == 1 else set())
            labels = {f"{q.title()} data source"} | ({"Data source"} if len(ds) == 1 else set())
            if q != "prometheus":
                self.add(f, "-", "template-datasource-rule",
                         f"data source variable {t.get('name')!r} has query {q!r}, "
                         "should be 'prometheus'")
            if t.get("name") not in names:
                self.add(f, "-", "template-datasource-rule",
                         f"data source variable named {t.get('name')!r}, should be named "
                         f"{' or '.join(sorted(names))}")
            if t.get("label") not in labels:
                self.add(f, "-", "template-datasource-rule",
                         f"data source variable labeled {t.get('label')!r}, should be labeled "
                         f"{' or '.join(sorted(labels))}")
        for name, rule in (("job", "template-job-rule"), ("instance", "template-instance-rule")):
            t = by_name.get(name)
            if t is None:
                self.add(f, "-", rule, f"is missing the {name} template variable")
            else:
                self.check_query_variable(f, t, rule, name.title(), require_multi=True)
        for t in templates:
            cur = t.get("current")
            if not (isinstance(cur, dict) and "text" in cur and "value" in cur):
                self.add(f, "-", "template-current-rule",
                         f"variable {t.get('name')!r} has no current value (text and value), "
                         f"has {cur!r}")
            if t.get("type") != "query":
                continue
            name = t.get("name")
            if t.get("refresh") != 2:
                self.add(f, "-", "template-on-time-change-reload-rule",
                         f"variable {name!r} should refresh on time range change (refresh: 2), "
                         f"is {t.get('refresh')!r}")
            q = variable_query(t)
            try:
                parse_label_query(q)
            except PromQLError as e:
                self.add(f, "-", "template-label-promql-rule",
                         f"variable {name!r} has an invalid query {q!r}: {e}")
            else:
                self.check_variables(f, f"variable {name}", q, by_name)

    def check_query_variable(self, f, t, rule, label, require_multi, all_value=".+"):
        name = t.get("name")
        if t.get("type") != "query":
            self.add(f, "-", rule, f"{name} variable should be a Prometheus query, is "
                                   f"{t.get('type')!r}")
        if datasource_uid(t.get("datasource")) not in TEMPLATED_DS:
            self.add(f, "-", rule, f"{name} variable should use datasource '$datasource', uses "
                                   f"{t.get('datasource')!r}")
        if t.get("label") != label:
            self.add(f, "-", rule, f"{name} variable should be labeled {label!r}, is "
                                   f"{t.get('label')!r}")
        if require_multi:
            if not t.get("multi"):
                self.add(f, "-", rule, f"{name} variable should be a multi select")
            if not t.get("includeAll"):
                self.add(f, "-", rule, f"{name} variable should include All")
        if (require_multi or t.get("includeAll")) and t.get("allValue") != all_value:
            self.add(f, "-", rule, f"{name} variable allValue should be {all_value!r}, is "
                                   f"{t.get('allValue')!r}")

    # -- panels --

    def lint_panel(self, f, d, p, title, by_name):
        ptype = p.get("type")
        if ptype == "row":
            if not p.get("title"):
                self.add(f, title, "panel-title-description-rule", "row has no title")
            return
        if not p.get("title") or not p.get("description"):
            self.add(f, title, "panel-title-description-rule",
                     f"panel has a missing title or description (title {p.get('title')!r}, "
                     f"description {p.get('description')!r})")
        if ptype in UNIT_PANELS:
            fc = p.get("fieldConfig", {}) or {}
            unit = (fc.get("defaults", {}) or {}).get("unit")
            if ptype == "heatmap":
                unit = unit or p.get("options", {}).get("yAxis", {}).get("unit")
            if unit not in VALID_UNITS:
                self.add(f, title, "panel-units-rule",
                         f"panel has no or an invalid unit: {unit!r}")
            for o in fc.get("overrides", []) or []:
                for prop in o.get("properties", []) or []:
                    if prop.get("id") == "unit" and prop.get("value") not in VALID_UNITS:
                        self.add(f, title, "panel-units-rule",
                                 f"override sets an invalid unit: {prop.get('value')!r}")
        targets = p.get("targets") or []
        if ptype not in ("text", "news", "dashlist", "alertlist") and not targets:
            self.add(f, title, "panel-no-targets-rule", "panel has no queries")
        if targets or ptype in ("timeseries", "stat", "table", "heatmap", "graph", "gauge"):
            if datasource_uid(p.get("datasource")) not in TEMPLATED_DS:
                self.add(f, title, "panel-datasource-rule",
                         f"panel does not use the templated datasource, uses "
                         f"{p.get('datasource')!r}")
        for t in targets:
            if "datasource" in t and datasource_uid(t["datasource"]) not in TEMPLATED_DS:
                self.add(f, title, "panel-datasource-rule",
                         f"target {t.get('refId')} does not use the templated datasource, uses "
                         f"{t.get('datasource')!r}")
            expr = t.get("expr", "")
            self.lint_expr(f, title, expr, by_name, ref=t.get("refId"))
            if ptype == "heatmap":
                if t.get("format") != "heatmap":
                    self.add(f, title, "panel-heatmap-rule",
                             f"heatmap target {t.get('refId')} should have format 'heatmap', "
                             f"has {t.get('format')!r}")
                if "_bucket" not in str(expr):
                    self.add(f, title, "panel-heatmap-rule",
                             f"heatmap target {t.get('refId')} should read histogram _bucket "
                             "series")
            elif t.get("format") == "heatmap":
                self.add(f, title, "panel-heatmap-rule",
                         f"target {t.get('refId')} has format 'heatmap' in a {ptype} panel")

    def lint_expr(self, f, where, expr, by_name, ref=None):
        label = f"{where}" + (f" [{ref}]" if ref else "")
        try:
            tree = parse_promql(expr)
        except PromQLError as e:
            self.add(f, label, "target-promql-rule", f"invalid PromQL {expr!r}: {e}")
            return
        self.check_variables(f, label, expr, by_name)
        for node, parents in walk(tree):
            if node.kind == "matrix" and parents:
                parent = parents[-1]
                if (parent.kind == "call" and parent.func in ("rate", "irate")
                        and node.range != ("var", "__rate_interval")):
                    self.add(f, label, "target-rate-interval-rule",
                             f"{parent.func}() should use [$__rate_interval], uses "
                             f"[{node.range[1] if node.range[0] == 'duration' else '$' + node.range[1]}]"
                             f" in {expr!r}")
            if node.kind != "selector":
                continue
            for lname, rule in (("job", "target-job-rule"), ("instance", "target-instance-rule")):
                if not any(n == lname and o == "=~" and v in (f"${lname}", f"${{{lname}}}")
                           for n, o, v in node.matchers):
                    self.add(f, label, rule, f"selector {selector_text(node)} lacks "
                                             f"{lname}=~\"${lname}\" in {expr!r}")
            name = node.name or next((v for n, o, v in node.matchers
                                      if n == "__name__" and o == "="), "")
            if name.endswith("_total"):
                ok = (len(parents) >= 2 and parents[-1].kind == "matrix"
                      and parents[-2].kind == "call"
                      and parents[-2].func in ("rate", "irate", "increase"))
                if not ok:
                    self.add(f, label, "target-counter-agg-rule",
                             f"counter {name} is not directly inside rate, irate or increase "
                             f"in {expr!r}")

    def check_variables(self, f, where, expr, by_name):
        for v in sorted(variables_in(expr)):
            if v not in by_name and v not in BUILTIN_VARIABLES and not v.startswith("__"):
                self.add(f, where, "template-undefined-variable-rule",
                         f"${v} is not a template variable of this dashboard")


def iter_panels(panels):
    for p in panels or []:
        if isinstance(p, dict):
            yield p
            yield from iter_panels(p.get("panels"))


def all_exprs(d):
    for a in d.get("annotations", {}).get("list", []) or []:
        if isinstance(a.get("expr"), str):
            yield a.get("name"), a["expr"]
        if isinstance(a.get("target"), dict) and isinstance(a["target"].get("expr"), str):
            yield a.get("name"), a["target"]["expr"]
    for p in iter_panels(d.get("panels", [])):
        for t in p.get("targets") or []:
            if isinstance(t.get("expr"), str):
                yield p.get("title"), t["expr"]
    for t in d.get("templating", {}).get("list", []) or []:
        if t.get("type") == "query":
            yield t.get("name"), variable_query(t)


def datasource_uid(ds):
    if isinstance(ds, dict):
        return ds.get("uid")
    return ds  # Grafana < 8.3: the datasource as a plain string


def variable_query(t):
    q = t.get("query", "")
    if isinstance(q, dict):
        q = q.get("query", "")
    return q if isinstance(q, str) else ""


def selector_text(node):
    inner = ", ".join(f'{n}{o}"{v}"' for n, o, v in node.matchers)
    return f"{node.name or ''}{{{inner}}}"


def split_top_level(s):
    depth, quote, parts, cur, i = 0, None, [], [], 0
    while i < len(s):
        c = s[i]
        if quote:
            cur.append(c)
            if c == "\\" and i + 1 < len(s):
                cur.append(s[i + 1])
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'`":
            quote = c
            cur.append(c)
        elif c in "([{":
            depth += 1
            cur.append(c)
        elif c in ")]}":
            depth -= 1
            cur.append(c)
        elif c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return [p.strip() for p in parts]


LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_label_query(q):
    """label_names(), label_values(label), label_values(selector, label), metrics(regex),
    query_result(expr): Grafana's Prometheus variable queries."""
    m = re.fullmatch(r"\s*([a-z_]+)\((.*)\)\s*", q or "", re.S)
    if not m:
        raise PromQLError("not of the form function(...)")
    func, body = m.group(1), m.group(2)
    if func not in ("label_names", "label_values", "metrics", "query_result"):
        raise PromQLError(f"invalid function {func!r}")
    if func == "label_values":
        args = split_top_level(body)
        if len(args) == 1 and LABEL_NAME.match(args[0]):
            return
        if len(args) != 2 or not LABEL_NAME.match(args[1]):
            raise PromQLError("label_values takes (label) or (selector, label)")
        tree = parse_promql(args[0])
        if tree.kind != "selector":
            raise PromQLError("label_values' first argument must be a series selector")
    elif func == "query_result":
        parse_promql(body)
    elif func == "label_names" and body.strip():
        tree = parse_promql(body)
        if tree.kind != "selector":
            raise PromQLError("label_names' argument must be a series selector")


# ---- self-test -----------------------------------------------------------------------------

GOOD_EXPRS = [
    'sum by (instance) (rate(x_total{job=~"$job", instance=~"$instance"}[$__rate_interval]))',
    'histogram_quantile(0.99, sum by (le) (rate(h_bucket{job=~"$job", instance=~"$instance"}[$__rate_interval])))',
    'a{job=~"$job", instance=~"$instance"} / on (instance) group_left (x) b{job=~"$job", instance=~"$instance"}',
    'round(sum(increase(x_total{job=~"$job", instance=~"$instance"}[$__range])))',
    'max(g{job=~"$job", instance=~"$instance"}) * 1000 > 0',
    '-g{job=~"$job", instance=~"$instance"} ^ 2 == bool 4',
    'label_replace(g{job=~"$job", instance=~"$instance"}, "a", "$1", "b", "(.*)")',
    'max_over_time(g{job=~"$job", instance=~"$instance"}[5m:1m] offset 1h)',
    'topk(3, g{job=~"$job", instance=~"$instance"}) or vector(0)',
    'sum without (le) (g{job=~"$job", instance=~"$instance"}) unless g{job=~"$job", instance=~"$instance"}',
]
BAD_EXPRS = [
    'sum(rate(x_total{job=~"$job"}[$__rate_interval])',   # unbalanced (
    'rate(x_total{job=~"$job"}[$__rate_interval]))',      # unbalanced )
    'x{job=~"$job}',                                     # unterminated string
    'x{job=~"$job"',                                     # unclosed {
    'rate(x_total{job=~"$job"})',                         # rate of an instant vector
    'foo(x)',                                            # unknown function
    'sum by (le (x)',                                    # bad grouping
    'x +',                                               # missing operand
    'x{job~"a"}',                                        # bad matcher operator
    '{job=""}',                                          # only empty matchers
    'histogram_quantile(x, 0.5)',                        # argument types
    'x[5m] + 1',                                         # range vector in arithmetic
    '1 > 2',                                             # scalar comparison without bool
    'sum(x) offset 5m',                                  # offset after a function
    'x{a="\\q"}',                                        # bad escape
]


def good_dashboard():
    ds = {"type": "prometheus", "uid": "${datasource}"}
    sel = 'job=~"$job", instance=~"$instance", pipeline_stage=~"$pipeline_stage"'

    def qvar(name, label, query, all_value=".+"):
        return {"name": name, "label": label, "type": "query", "datasource": ds,
                "query": {"query": query, "refId": "A"}, "multi": True, "includeAll": True,
                "allValue": all_value, "refresh": 2,
                "current": {"text": ["All"], "value": ["$__all"]}}

    return {
        "uid": "selftest-good", "title": "self test", "tags": ["selftest"],
        "schemaVersion": 39,
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource",
             "query": "prometheus", "current": {"text": "default", "value": "default"}},
            qvar("job", "Job", "label_values(up, job)"),
            qvar("instance", "Instance", 'label_values(up{job=~"$job"}, instance)'),
            qvar("pipeline", "Pipeline",
                 'label_values(x{job=~"$job", instance=~"$instance"}, pipeline)', ".*"),
            qvar("pipeline_stage", "Pipeline stage",
                 'label_values(x{job=~"$job", instance=~"$instance", pipeline=~"$pipeline"}, '
                 'pipeline_stage)'),
        ]},
        "annotations": {"list": [
            {"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
             "name": "Annotations & Alerts"},
            {"name": "kills", "datasource": ds, "target": {
                "refId": "Anno",
                "expr": f"increase(k_total{{{sel}}}[$__rate_interval]) > 0"}},
        ]},
        "panels": [
            {"type": "row", "title": "Row", "id": 1, "panels": []},
            {"type": "timeseries", "title": "Rate", "description": "d", "id": 2,
             "datasource": ds, "fieldConfig": {"defaults": {"unit": "ops"}, "overrides": [
                 {"matcher": {"id": "byName", "options": "x"},
                  "properties": [{"id": "unit", "value": "s"}]}]},
             "targets": [{"refId": "A", "datasource": ds,
                          "expr": f"sum by (pipeline_stage) (rate(c_total{{{sel}}}[$__rate_interval]))"}]},
            {"type": "heatmap", "title": "Heat", "description": "d", "id": 3, "datasource": ds,
             "fieldConfig": {"defaults": {}}, "options": {"yAxis": {"unit": "s"}},
             "targets": [{"refId": "A", "format": "heatmap",
                          "expr": f"sum by (le) (rate(h_bucket{{{sel}}}[$__rate_interval]))"}]},
            {"type": "stat", "title": "Gauge", "description": "d", "id": 4, "datasource": ds,
             "fieldConfig": {"defaults": {"unit": "bytes"}},
             "targets": [{"refId": "A", "expr": f"g{{{sel}}} / scalar(vector($__range_s))"}]},
        ],
    }


def _panel(d, pid):
    return next(p for p in d["panels"] if p["id"] == pid)


def _set_expr(pid, expr):
    def mutate(d):
        _panel(d, pid)["targets"][0]["expr"] = expr
    return mutate


def _var(var, **changes):
    def mutate(d):
        t = next(t for t in d["templating"]["list"] if t["name"] == var)
        for k, v in changes.items():
            if v is None:
                t.pop(k, None)
            else:
                t[k] = v
    return mutate


def _drop_var(name):
    def mutate(d):
        d["templating"]["list"] = [t for t in d["templating"]["list"] if t["name"] != name]
    return mutate


SEL = 'job=~"$job", instance=~"$instance", pipeline_stage=~"$pipeline_stage"'
# rule → mutations of the good dashboard that the rule must catch
BAD_CASES = {
    "no-inputs-rule": [lambda d: d.update({"__inputs": [{"name": "DS_PROMETHEUS"}]})],
    "uid-rule": [lambda d: d.pop("uid"), lambda d: d.update({"uid": "has spaces"}),
                 lambda d: d.update({"uid": "x" * 41})],
    "dashboard-title-rule": [lambda d: d.update({"title": ""})],
    "tags-rule": [lambda d: d.pop("tags"), lambda d: d.update({"tags": []})],
    "template-datasource-rule": [
        _drop_var("datasource"), _var("datasource", name="ds"),
        _var("datasource", label="Prom"), _var("datasource", query="loki")],
    "template-job-rule": [
        _drop_var("job"), _var("job", multi=False), _var("job", allValue=None),
        _var("job", includeAll=False), _var("job", type="custom"),
        _var("job", datasource={"type": "prometheus", "uid": "abc123"}),
        _var("job", label="job")],
    "template-instance-rule": [_drop_var("instance"), _var("instance", allValue=".*")],
    "template-pipeline-stage-rule": [
        _drop_var("pipeline_stage"), _var("pipeline_stage", allValue=".*"),
        _var("pipeline_stage", label="Stage")],
    "template-pipeline-rule": [
        _drop_var("pipeline"), _var("pipeline", allValue=".+"), _var("pipeline", multi=False)],
    "template-current-rule": [_var("job", current={}), _var("datasource", current=None),
                              _var("instance", current={"text": "All"})],
    "annotation-builtin-rule": [lambda d: d["annotations"]["list"].pop(0)],
    "annotation-target-rule": [
        lambda d: d["annotations"]["list"][1].update(
            {"expr": d["annotations"]["list"][1].pop("target")["expr"]}),
        lambda d: d["annotations"]["list"][1]["target"].pop("refId")],
    "template-on-time-change-reload-rule": [_var("job", refresh=1), _var("instance", refresh=None)],
    "template-label-promql-rule": [
        _var("job", query={"query": "label_values(up{, job)"}),
        _var("job", query="values(up, job)"),
        _var("instance", query="label_values(sum(up), instance)")],
    "template-undefined-variable-rule": [_set_expr(2, f'rate(c_total{{{SEL}, x=~"$nope"}}[$__rate_interval])')],
    "panel-id-rule": [lambda d: _panel(d, 3).update({"id": 2}),
                      lambda d: d["panels"][1].pop("id")],
    "panel-datasource-rule": [
        lambda d: _panel(d, 2).update({"datasource": {"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}}),
        lambda d: _panel(d, 2).pop("datasource"),
        lambda d: _panel(d, 2)["targets"][0].update({"datasource": "Prometheus"}),
        lambda d: d["annotations"]["list"][1].update({"datasource": {"uid": "prom"}})],
    "panel-title-description-rule": [
        lambda d: _panel(d, 2).update({"description": ""}),
        lambda d: _panel(d, 4).pop("title"), lambda d: _panel(d, 1).update({"title": ""})],
    "panel-units-rule": [
        lambda d: _panel(d, 2)["fieldConfig"]["defaults"].pop("unit"),
        lambda d: _panel(d, 4)["fieldConfig"]["defaults"].update({"unit": "megabytes"}),
        lambda d: _panel(d, 3)["options"]["yAxis"].pop("unit"),
        lambda d: _panel(d, 2)["fieldConfig"]["overrides"][0]["properties"][0].update(
            {"value": "seconds"})],
    "panel-no-targets-rule": [lambda d: _panel(d, 4).update({"targets": []})],
    "panel-heatmap-rule": [
        lambda d: _panel(d, 3)["targets"][0].update({"format": "time_series"}),
        _set_expr(3, f"sum(rate(c_total{{{SEL}}}[$__rate_interval]))"),
        lambda d: _panel(d, 2)["targets"][0].update({"format": "heatmap"})],
    "target-promql-rule": [_set_expr(2, e) for e in BAD_EXPRS] + [
        lambda d: d["annotations"]["list"][1]["target"].update({"expr": "sum(k_total"})],
    "target-rate-interval-rule": [
        _set_expr(2, f"rate(c_total{{{SEL}}}[5m])"),
        _set_expr(2, f"irate(c_total{{{SEL}}}[$__interval])")],
    "target-job-rule": [
        _set_expr(2, 'rate(c_total{instance=~"$instance"}[$__rate_interval])'),
        _set_expr(4, 'g{job="$job", instance=~"$instance"}'),
        _set_expr(4, f'g{{{SEL}}} / h{{instance=~"$instance"}}'),
        lambda d: d["annotations"]["list"][1]["target"].update(
            {"expr": 'k{instance=~"$instance"} > 0'})],
    "target-instance-rule": [_set_expr(4, 'g{job=~"$job"}'),
                             _set_expr(4, 'g{job=~"$job", instance=~"$job"}')],
    "target-counter-agg-rule": [
        _set_expr(4, f"c_total{{{SEL}}}"),
        _set_expr(4, f"sum(c_total{{{SEL}}})"),
        _set_expr(4, f"delta(c_total{{{SEL}}}[$__rate_interval])"),
        _set_expr(4, f'{{__name__="c_total", {SEL}}}')],
}


def self_test():
    failures = []
    for e in GOOD_EXPRS:
        try:
            parse_promql(e)
        except PromQLError as err:
            failures.append(f"parser rejects valid PromQL {e!r}: {err}")
    for e in BAD_EXPRS:
        try:
            parse_promql(e)
            failures.append(f"parser accepts invalid PromQL {e!r}")
        except PromQLError:
            pass

    good = Linter()
    good.lint_dashboard("good.json", good_dashboard())
    for v in good.violations:
        failures.append(f"the known-good dashboard is flagged: {':'.join(v)}")

    cases = 0
    for rule, mutations in BAD_CASES.items():
        for i, mutate in enumerate(mutations):
            d = copy.deepcopy(good_dashboard())
            mutate(d)
            lint = Linter()
            lint.lint_dashboard(f"bad-{rule}-{i}.json", d)
            cases += 1
            if not any(v[2] == rule for v in lint.violations):
                failures.append(f"{rule} does not catch bad case {i}; violations: "
                                f"{[':'.join(v) for v in lint.violations]}")

    # File-level: broken JSON, and a uid used twice.
    with tempfile.TemporaryDirectory() as tmp:
        broken = os.path.join(tmp, "broken.json")
        with open(broken, "w") as f:
            f.write('{"uid": "x", "panels": [}')
        a, b = os.path.join(tmp, "a.json"), os.path.join(tmp, "b.json")
        for path in (a, b):
            with open(path, "w") as f:
                json.dump(good_dashboard(), f)
        lint = Linter()
        lint.lint_files([broken, a, b])
        cases += 2
        if not any(v[2] == "json-parse-rule" and v[0] == broken for v in lint.violations):
            failures.append("json-parse-rule does not catch broken JSON")
        if not any(v[2] == "uid-rule" and v[0] == b for v in lint.violations):
            failures.append("uid-rule does not catch a uid used by two dashboards")

    # The command line fails on a violation.
    if main_exit([os.path.join(os.path.dirname(__file__), "does-not-exist.json")],
                 out=io.StringIO()) == 0:
        failures.append("lint.py exits 0 on a missing file")

    for f in failures:
        print(f"self-test FAIL: {f}", file=sys.stderr)
    print(f"lint self-test: {len(GOOD_EXPRS)} valid and {len(BAD_EXPRS)} invalid queries, "
          f"{cases} bad dashboards over {len(BAD_CASES) + 1} rules: "
          f"{'FAILED' if failures else 'ok'}")
    return 1 if failures else 0


def main_exit(paths, out=None):
    lint = Linter()
    lint.lint_files(paths)
    for v in lint.violations:
        print(":".join(str(x) for x in v), file=out or sys.stderr)
    return 1 if lint.violations else 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 2
    rc = main_exit(argv[1:])
    if rc == 0:
        print(f"lint: {len(argv) - 1} dashboard(s), no violations")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
