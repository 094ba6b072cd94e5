"""Feed-forward layer specs: dense (gated) MLPs and mixtures of experts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DenseFfn:
    intermediate_size: int
    kind: str = "dense"

    def params(self, hidden_size: int) -> int:
        # gate, up and down projections (SwiGLU)
        return 3 * hidden_size * self.intermediate_size

    def active_params(self, hidden_size: int) -> int:
        return self.params(hidden_size)

    def routed_expert_params(self, hidden_size: int) -> int:
        return 0


@dataclass(frozen=True)
class MoeFfn:
    """Routed experts (top-k of E) plus always-on shared experts and a router.

    `expert_hidden_size` (latent MoE, Kimi-K3): experts work in a smaller space reached
    through a down and an up projection shared by all experts.
    """

    num_experts: int
    experts_per_token: int
    expert_intermediate_size: int
    shared_intermediate_size: int = 0
    expert_hidden_size: int | None = None
    kind: str = "moe"

    def _expert_params(self, hidden_size: int) -> int:
        width = self.expert_hidden_size or hidden_size
        return 3 * width * self.expert_intermediate_size

    def _always_on_params(self, hidden_size: int) -> int:
        shared = 3 * hidden_size * self.shared_intermediate_size
        router = hidden_size * self.num_experts
        latent = 2 * hidden_size * self.expert_hidden_size if self.expert_hidden_size else 0
        return shared + router + latent

    def routed_expert_params(self, hidden_size: int) -> int:
        return self.num_experts * self._expert_params(hidden_size)

    def params(self, hidden_size: int) -> int:
        return self.routed_expert_params(hidden_size) + self._always_on_params(hidden_size)

    def active_params(self, hidden_size: int) -> int:
        routed = self.experts_per_token * self._expert_params(hidden_size)
        return routed + self._always_on_params(hidden_size)

    def expert_params(self, hidden_size: int) -> int:
        """Parameters of one routed expert (for the expert-touch model of decode)."""
        return self._expert_params(hidden_size)


Ffn = DenseFfn | MoeFfn
