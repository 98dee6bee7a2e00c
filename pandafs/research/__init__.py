"""`internet.research`: polite fetching, page extraction, visit records, the tool.
Import from the module that defines each name: a rebuild needs only `reliability`."""
