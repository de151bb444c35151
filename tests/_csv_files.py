"""Writing the command line's CSV inputs in the tests (every float written exactly, by ``repr``)."""

import csv


def write_csv(path, cols):
    """Write ``cols`` (column name -> values) to ``path`` as CSV, with a header row."""
    names = list(cols)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        for row in zip(*(cols[n] for n in names)):
            w.writerow([repr(float(v)) if isinstance(v, float) else v for v in row])
