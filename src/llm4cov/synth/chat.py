"""Chat messages of a data point: the state prompt and the assistant's testbench.

The prompt is :func:`llm4cov.agent.prompt.build_messages` of the state, exactly as the
agent builds it at inference time. Generation may add the syntax-rules section;
training data never does (:func:`training_messages`).
"""

from __future__ import annotations

from llm4cov.agent.prompt import build_messages, syntax_rules
from llm4cov.policies.base import AgentState
from llm4cov.synth.records import StateInfo
from llm4cov.tasks.model import Task
from llm4cov.util.escape import prompt_block


class ContaminatedPromptError(ValueError):
    """A training prompt that contains the generation-time syntax rules."""


def state_messages(task: Task, state: StateInfo, rules: str | None = None) -> list[dict[str, str]]:
    """System + user messages for state ``s_t`` (``s_0``: no testbench, no observation;
    a state whose response held no code shows an empty testbench, as the agent does)."""
    testbench = None if state.is_initial else (state.testbench or "")
    return build_messages(task, testbench, state.observation, rules)


def policy_state(state: StateInfo) -> AgentState:
    """``state`` as the policy sees it: ``s_0`` is round 0, any sampled state round 1
    (synthesis states are one transition from ``s_0``)."""
    if state.is_initial:
        return AgentState()
    return AgentState(1, state.testbench or "", state.observation)


def assistant_message(testbench: str) -> dict[str, str]:
    """The answer as one ``systemverilog`` fenced block (no reasoning, no prose), fenced
    as the prompt fences a testbench (:func:`llm4cov.util.escape.prompt_block`)."""
    return {"role": "assistant", "content": prompt_block(testbench, "systemverilog")}


def training_messages(task: Task, state: StateInfo, testbench: str) -> list[dict[str, str]]:
    """``[system, user, assistant]`` for SFT: the prompt without the syntax rules.

    Raises:
        ContaminatedPromptError: a message contains the rules text (a guard against a
            future prompt change; a repo would have to quote the whole rules file).
    """
    messages = [*state_messages(task, state), assistant_message(testbench)]
    rules = syntax_rules()
    for m in messages:
        if rules in m["content"]:
            raise ContaminatedPromptError(f"{task.id}: syntax rules in a training message")
    return messages
