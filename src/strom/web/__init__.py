"""The thin HTTP shell every strom HTTP service shares (the schema registry, Connect, ...):
Starlette on uvicorn, the listener settings (``listeners``, TLS by Kafka's and Confluent's
``ssl.*`` names), HTTP basic authentication, ``{"error_code", "message"}`` error bodies, the
request body limit, the request log and a graceful stop. The services keep their routes."""
