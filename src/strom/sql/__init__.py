"""SQL over streams: ksqlDB's language on Spark (issue 28).

The pure part so far: `parser` (text to statements, `SqlSyntaxError` naming line and column),
the trees (`statements`, `expressions`, `types`), `formatter` (a tree back to canonical SQL,
as ksqlDB's SqlFormatter writes the command topic and `statementText`) and `analyzer` (a
SELECT checked against the sources it reads: the planner's first step).
"""
