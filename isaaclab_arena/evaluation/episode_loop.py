"""The evaluation loop: steps an env with a policy until every episode of its share has ended.

An env slot that resets takes the next layout of the env's replay queue (``ReplayPoseSource``), in reset-request
order, so the queue position a slot took is the (local) episode it runs. Per step: one ``check_action``, one
``env.step``; episode ends are read from the termination manager (the term that fired). No Python loop over envs
on steps where no episode ends. Scenes with object pools: the pool members each episode started with joined
(``env.extras[JOINED_EXTRAS_KEY]`` right after the reset that began it) go into its outcome as ``pool_joined``.
"""

from __future__ import annotations

import math

import torch

from isaaclab_arena.utils.interrupts import raise_if_interrupted


def replay_source_of(pose_source):
    from isaaclab_arena.environments.replay_source import ReplayPoseSource

    sources = getattr(pose_source, "sources", [pose_source])
    found = [s for s in sources if isinstance(s, ReplayPoseSource)]
    if not found:
        raise RuntimeError("evaluation env has no replay pose source for its episode layouts")
    return found[0]


class EpisodeLoop:
    """Steps an env with a policy until every episode of its share has ended; collects raw outcomes.

    Args:
        env: The gym env (its reset term replays the share's layouts, ``ReplayPoseSource``).
        policy: The policy (protocol of ``evaluation/policy.py``).
        policy_type: Its name, for refusals.
        num_local: Episodes of this share (queue positions 0 .. num_local - 1).
        source: The env's replay source.
        max_steps: Step limit (None: episode length x (episodes per env + 1)).
        progress: A tqdm bar (or None) updated per ended episode.
        on_outcomes: Called with the outcomes so far after every step that ended an episode of the share.
    """

    def __init__(self, env, policy, policy_type: str, num_local: int, source, max_steps: int | None = None,
                 progress=None, on_outcomes=None):
        from isaaclab_arena.evaluation.policy import EnvInfo

        self.env, self.policy, self.policy_type = env, policy, policy_type
        self.u = env.unwrapped
        self.info = EnvInfo.of(env)
        self.num_local, self.source, self.progress = num_local, source, progress
        self.on_outcomes = on_outcomes
        per_env = math.ceil(num_local / self.u.num_envs)
        self.max_steps = max_steps or int(self.u.max_episode_length) * (per_env + 1)
        tm = self.u.termination_manager
        self.term_names = list(tm.active_terms)
        self.time_out_terms = [n for n in self.term_names if tm.get_term_cfg(n).time_out]
        self.joined: dict[int, dict[str, bool]] = {}  # local episode -> {pool member: joined}, at its reset

    def _note_joined(self, envs: torch.Tensor) -> None:
        """The joined flags of the episodes envs ``envs`` just reset into (object pools; nothing without them)."""
        from isaaclab_arena.environments.object_pools import JOINED_EXTRAS_KEY

        joined = self.u.extras.get(JOINED_EXTRAS_KEY)
        if not joined:
            return
        names = list(joined)
        flags = torch.stack([joined[m] for m in names], 1)[envs.to(self.u.device)].cpu().tolist()
        for e, row in zip(envs.tolist(), flags):  # the envs that reset this step, not every env
            k = int(self.source.slot_position[e])
            if 0 <= k < self.num_local:
                self.joined[k] = dict(zip(names, map(bool, row)))

    def _causes(self, ended: torch.Tensor) -> list[str]:
        """Name of the term that ended each env in ``ended``: a non-time-out term first, else a time-out."""
        tm = self.u.termination_manager
        fired = torch.stack([tm.get_term(n)[ended] for n in self.term_names], -1).cpu()  # (E, T)
        order = [i for i, n in enumerate(self.term_names) if n not in self.time_out_terms] + \
                [i for i, n in enumerate(self.term_names) if n in self.time_out_terms]
        out = []
        for row in fired.tolist():  # a few ended envs per step, not a per-env loop every step
            hit = [self.term_names[i] for i in order if row[i]]
            out.append(hit[0] if hit else "unknown")
        return out

    def run(self) -> dict[int, dict]:
        """``{local episode: {"success", "termination", "episode_length_steps"[, "pool_joined"]}}`` for every local
        episode."""
        from isaaclab_arena.evaluation.policy import check_action

        u, n = self.u, self.num_local
        obs, _ = self.env.reset()
        self._note_joined(torch.arange(u.num_envs))
        self.policy.reset(None)
        running = self.source.slot_position.clone()
        steps_in = torch.zeros(u.num_envs, dtype=torch.long)
        outcomes: dict[int, dict] = {}
        has_success = "success" in self.term_names
        steps = 0
        while len(outcomes) < n and steps < self.max_steps:
            raise_if_interrupted()
            action = check_action(self.policy.get_action(self.env, obs), self.info, self.policy_type)
            obs, _, terminated, truncated, _ = self.env.step(action)
            steps += 1
            steps_in += 1
            done = (terminated | truncated).cpu()
            if not bool(done.any()):
                continue
            ended = done.nonzero().flatten()
            causes = self._causes(ended.to(u.device))
            before = len(outcomes)
            for e, cause in zip(ended.tolist(), causes):
                k = int(running[e])
                if 0 <= k < n and k not in outcomes:
                    outcomes[k] = {"success": has_success and cause == "success", "termination": cause,
                                   "episode_length_steps": int(steps_in[e])}
                    if self.progress is not None:
                        self.progress.update(1)
            if self.on_outcomes is not None and len(outcomes) > before:
                self.on_outcomes(outcomes)
            running[ended] = self.source.slot_position[ended]
            self._note_joined(ended)
            steps_in[ended] = 0
            self.policy.reset(ended.to(u.device))
        for e in range(u.num_envs):  # cut off by the step limit: what is still open fails
            k = int(running[e])
            if 0 <= k < n and k not in outcomes:
                outcomes[k] = {"success": False, "termination": "cut_off", "episode_length_steps": int(steps_in[e])}
        for k in range(n):  # never started within the limit (only when the limit is below one episode per env)
            outcomes.setdefault(k, {"success": False, "termination": "cut_off", "episode_length_steps": 0})
        for k, joined in self.joined.items():
            outcomes[k]["pool_joined"] = joined
        self.steps = steps
        return outcomes


__all__ = ["EpisodeLoop", "replay_source_of"]
