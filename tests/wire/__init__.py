"""A local server speaking the OpenAI and Anthropic streaming wire formats, for tests."""
