import torch
import torch.nn as nn


# Asks for four times the GPU's memory as scratch space: the allocation fails with out of memory.
class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        total = torch.cuda.get_device_properties(x.device).total_memory
        scratch = torch.empty(4 * total // 4, dtype=torch.float32, device=x.device)
        return torch.relu(x) + scratch[:1] * 0
