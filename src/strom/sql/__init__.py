"""SQL over streams: ksqlDB's language on Spark (issue 28).

The pure part: `parser` (text to statements, `SqlSyntaxError` naming line and column), the
trees (`statements`, `expressions`, `types`), `formatter` (a tree back to canonical SQL, as
ksqlDB's SqlFormatter writes the command topic and `statementText`), `analyzer` (a SELECT
checked against the sources it reads), `functions` (the function registry), `metastore`,
`entities` and `values`. On Spark: `compiler`, `serde`, `planner`, `push`. The server:
`commands` (the command topic), `engine`, `rest` (ksqlDB's REST API) and `server`.
"""
