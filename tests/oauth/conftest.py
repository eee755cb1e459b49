from tests.mcp_server.conftest import registry  # noqa: F401 - the default connectors, committed
