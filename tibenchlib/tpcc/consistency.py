"""TPC-C consistency conditions (specification clause 3.3.2) checked with SQL after a run.

Each condition is one query that returns the rows violating it (one row per warehouse or
district, or per order), so a passing condition returns nothing and a failing one says where.
Conditions 1–4 are the ones the specification requires to be checked at any time; 5, 6, 8 and 9
are cheap and catch a driver that updates one table and forgets another. Monetary sums compare
exactly: every amount is a DECIMAL with two decimals.

Run them on a quiet database (after the run, not during it): the queries read several tables
without a common snapshot.
"""

from __future__ import annotations

import pandas as pd
import sqlalchemy as sa

__all__ = ["CONDITIONS", "check_consistency"]

#: condition number → (what must hold, query returning the violations)
CONDITIONS: dict[int, tuple[str, str]] = {
    1: (
        "W_YTD = sum(D_YTD) of its districts",
        """SELECT w_id, w_ytd, s FROM warehouse
           JOIN (SELECT d_w_id, SUM(d_ytd) AS s FROM district GROUP BY d_w_id) d ON d_w_id = w_id
           WHERE w_ytd <> s""",
    ),
    2: (
        "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) in each district",
        """SELECT d_w_id, d_id, d_next_o_id, o.m AS max_o_id, n.m AS max_no_o_id FROM district
           JOIN (SELECT o_w_id, o_d_id, MAX(o_id) AS m FROM orders GROUP BY o_w_id, o_d_id) o
             ON o.o_w_id = d_w_id AND o.o_d_id = d_id
           LEFT JOIN (SELECT no_w_id, no_d_id, MAX(no_o_id) AS m FROM new_order
                      GROUP BY no_w_id, no_d_id) n ON n.no_w_id = d_w_id AND n.no_d_id = d_id
           WHERE d_next_o_id - 1 <> o.m OR (n.m IS NOT NULL AND d_next_o_id - 1 <> n.m)""",
    ),
    3: (
        "max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER, in each district",
        """SELECT no_w_id, no_d_id, MAX(no_o_id) - MIN(no_o_id) + 1 AS span, COUNT(*) AS n
           FROM new_order GROUP BY no_w_id, no_d_id
           HAVING MAX(no_o_id) - MIN(no_o_id) + 1 <> COUNT(*)""",
    ),
    4: (
        "sum(O_OL_CNT) = rows in ORDER-LINE, in each district",
        """SELECT o.o_w_id, o.o_d_id, o.s, l.n FROM
             (SELECT o_w_id, o_d_id, SUM(o_ol_cnt) AS s FROM orders GROUP BY o_w_id, o_d_id) o
           LEFT JOIN (SELECT ol_w_id, ol_d_id, COUNT(*) AS n FROM order_line
                      GROUP BY ol_w_id, ol_d_id) l ON l.ol_w_id = o.o_w_id AND l.ol_d_id = o.o_d_id
           WHERE l.n IS NULL OR o.s <> l.n""",
    ),
    5: (
        "O_CARRIER_ID is null exactly for the orders in NEW-ORDER",
        """SELECT o_w_id, o_d_id, o_id, o_carrier_id FROM orders
           LEFT JOIN new_order ON no_w_id = o_w_id AND no_d_id = o_d_id AND no_o_id = o_id
           WHERE (o_carrier_id IS NULL) <> (no_o_id IS NOT NULL)""",
    ),
    6: (
        "O_OL_CNT = rows in ORDER-LINE for each order",
        """SELECT o_w_id, o_d_id, o_id, o_ol_cnt, COUNT(ol_number) AS n FROM orders
           LEFT JOIN order_line ON ol_w_id = o_w_id AND ol_d_id = o_d_id AND ol_o_id = o_id
           GROUP BY o_w_id, o_d_id, o_id, o_ol_cnt HAVING o_ol_cnt <> COUNT(ol_number)""",
    ),
    8: (
        "W_YTD = sum(H_AMOUNT) of the warehouse's history",
        """SELECT w_id, w_ytd, h.s FROM warehouse
           LEFT JOIN (SELECT h_w_id, SUM(h_amount) AS s FROM history GROUP BY h_w_id) h
             ON h.h_w_id = w_id
           WHERE h.s IS NULL OR w_ytd <> h.s""",
    ),
    9: (
        "D_YTD = sum(H_AMOUNT) of the district's history",
        """SELECT d_w_id, d_id, d_ytd, h.s FROM district
           LEFT JOIN (SELECT h_w_id, h_d_id, SUM(h_amount) AS s FROM history
                      GROUP BY h_w_id, h_d_id) h ON h.h_w_id = d_w_id AND h.h_d_id = d_id
           WHERE h.s IS NULL OR d_ytd <> h.s""",
    ),
}


def check_consistency(engine: sa.Engine, conditions=None, *, examples: int = 5) -> pd.DataFrame:
    """Check the TPC-C consistency conditions on the loaded tables.

    Parameters
    ----------
    engine
        Connection to the database holding the TPC-C tables.
    conditions
        Condition numbers to check (default: all of :data:`CONDITIONS`).
    examples
        How many violating rows to keep per condition.

    Returns
    -------
    DataFrame
        One row per condition: ``condition`` (clause 3.3.2.N), ``rule``, ``violations``
        (number of warehouses, districts or orders breaking it), ``ok`` and ``examples``
        (the first violating rows, as dicts).
    """
    rows = []
    with engine.connect() as conn:
        for n in conditions or sorted(CONDITIONS):
            if n not in CONDITIONS:
                raise ValueError(
                    f"conditions: no consistency condition {n} (known: {sorted(CONDITIONS)})"
                )
            rule, sql = CONDITIONS[n]
            result = conn.execute(sa.text(sql))
            bad = [dict(r._mapping) for r in result]
            rows.append(
                {
                    "condition": n,
                    "rule": rule,
                    "violations": len(bad),
                    "ok": not bad,
                    "examples": bad[:examples],
                }
            )
    return pd.DataFrame(rows)
