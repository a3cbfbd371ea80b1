"""The shell face: ``pi-jupyter context|tree|info|prompt|rpc`` (pi's commands and its RPC mode) over the same core."""
