"""What every part of the worker shares: the exceptions that become EvalResult statuses (errors,
gpu_errors), the command channel (protocol), the state both roles keep (session), loading a problem
(problem), the canonical names of PyTorch computations (ops), dispatch modes that leave dynamo
unimported (dispatch_mode), GPU environment defaults (gpu_env) and the keyring filter (keyrings).

May import: nothing else of kforge_worker.
"""
