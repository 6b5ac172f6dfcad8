"""`column_stats`: statistics of one numeric column of a CSV table, asking
the user which column when the model did not say.

1. The table is parsed and its numeric columns found. With a `column`
   argument naming one of them, the answer comes at once.
2. Otherwise the user is asked, by a form (key `column`) offering the
   numeric columns; the offered columns travel in the call's state, because
   the answer arrives in a fresh instance.
3. The answer must be one of the offered columns (else the question comes
   again); declining or cancelling ends the call with an error result.

Every result also reports `callsInThisInstance`, a module-level counter:
it is always 1, because Airlock runs every round in a fresh instance.
"""

import csv
import io
import math
from dataclasses import dataclass

import airlock_guest as airlock
from airlock_guest import Tools  # noqa: F401  (the component's export)

calls_in_this_instance = 0


@dataclass
class Args:
    csv: str
    column: str | None = None


@dataclass
class ColumnForm:
    column: str


@airlock.tool(
    "Computes count, sum, min, max and mean of one numeric column of a CSV "
    "table (the first row names the columns). Without `column`, the user is "
    "asked which numeric column to use.",
    name="column_stats",
    title="Column statistics",
    input_schema={
        "type": "object",
        "properties": {
            "csv": {"type": "string", "description": "The table, comma-separated, header first."},
            "column": {"type": "string", "description": "The column to summarise (optional)."},
        },
        "required": ["csv"],
    },
    read_only=True,
    open_world=False,
)
def column_stats(call: airlock.Call):
    global calls_in_this_instance
    calls_in_this_instance += 1

    args = call.args(Args)
    header, rows = parse(args.csv)
    numeric = [name for i, name in enumerate(header) if is_numeric(rows, i)]
    if not numeric:
        raise airlock.ToolError("the table has no numeric column")

    chosen = args.column if args.column in numeric else None
    if chosen is None:
        offered = call.state(default={}).get("offered", numeric)
        answer = call.elicitation("column")
        if answer is not None and not answer.accepted:
            raise airlock.ToolError("cancelled: no column was chosen")
        form = answer.accepted_content(ColumnForm) if answer else None
        if form is not None and form.column in offered and form.column in numeric:
            chosen = form.column
    if chosen is None:
        return ask_for_column(call, numeric)

    values = [float(row[header.index(chosen)]) for row in rows if row[header.index(chosen)].strip()]
    stats = {
        "column": chosen,
        "count": len(values),
        "sum": sum(values),
        "min": min(values),
        "max": max(values),
        "mean": sum(values) / len(values),
        "callsInThisInstance": calls_in_this_instance,
    }
    airlock.log.info(f"column_stats summarised {chosen!r} over {len(values)} rows")
    summary = f"{chosen}: count {len(values)}, sum {stats['sum']:g}, min {stats['min']:g}, max {stats['max']:g}, mean {stats['mean']:g}"
    return airlock.Result.text(summary).with_structured(stats)


def ask_for_column(call: airlock.Call, numeric: list[str]) -> airlock.InputRequired:
    """The question, or an error naming the choices when the client cannot
    show forms."""
    if not call.client.can_elicit_form:
        raise airlock.ToolError(f"say which column: `column` is one of {', '.join(numeric)}")
    schema = {
        "type": "object",
        "properties": {"column": {"type": "string", "title": "Column", "enum": numeric}},
        "required": ["column"],
    }
    return (
        airlock.InputRequired()
        .elicit_form("column", "Which column should I summarise?", schema)
        .with_state({"offered": numeric})
    )


def parse(text: str) -> tuple[list[str], list[list[str]]]:
    """The header and the rows (padded to the header's width)."""
    table = [row for row in csv.reader(io.StringIO(text)) if row]
    if not table:
        raise airlock.ToolError("the table is empty")
    header, rows = [name.strip() for name in table[0]], table[1:]
    return header, [row + [""] * (len(header) - len(row)) for row in rows]


def is_numeric(rows: list[list[str]], index: int) -> bool:
    """Whether every non-empty cell of the column is a finite number (and
    one cell is not empty)."""
    cells = [row[index].strip() for row in rows if row[index].strip()]
    try:
        return bool(cells) and all(math.isfinite(float(cell)) for cell in cells)
    except ValueError:
        return False
