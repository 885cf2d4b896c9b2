"""The language-model classifier (Gemini, or a model behind an OpenAI-compatible API: the client
decides): one structured call answering a full ClassificationOutput and, when extraction
templates are given, each segment's fields in the same call. Runs record it under the client's
provider name (``gemini``, ``openai``).

The document's pages are delimited as data (engine.llm.delimiting); the system prompt says that
nothing inside them is an instruction. Feedback from a failed attempt comes in a feedback block
marked with the same boundary token, so the document cannot forge one. The prompt's version is a
hash of its text (the templates included), stored with every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field

from engine.fields.loop import base_prompt
from engine.fields.templates import Template
from engine.llm.client import CONFIDENCE_RUBRIC, prompt_version
from engine.llm.delimiting import (
    DATA_NOTICE,
    EXAMPLES_NOTICE,
    delimit,
    examples_block,
    feedback_block,
)
from engine.llm.operations import FieldValue
from engine.protocols import LLMClient
from engine.schemas import DISPLAY_NAMES, ClassificationOutput, DocType

SYSTEM_PROMPT = f"""You classify clinical documents for a hospital. Types:
{", ".join(f"{k} ({v})" for k, v in DISPLAY_NAMES.items())}.
Presence levels: PRIMARY (the segment is this type), EMBEDDED_RAW (a copy of such a report is
inside the segment), MENTION_ONLY (the type is only referred to), NO_EVIDENCE.
Split the document into segments of consecutive pages that form one document each. For every
segment give an assessment for every one of the five types; shares of a segment sum to 1; the
document mixture gives every type's overall share (summing to 1). Evidence snippets must be
copied verbatim from the page they cite (page numbers are 1-based); never paraphrase. Do not use
headers or footers (page numbers, fax banners, MRN, dates of birth) as evidence. Forms,
requisitions, cover sheets and routine lab panels are "other".
{DATA_NOTICE}
{EXAMPLES_NOTICE}"""

FIELDS_PROMPT = """Field extraction, in the same answer: for every segment add one entry to
segment_fields with its start_page, end_page and dominant type, and the fields of the template of
that type below, one item per field: value (null and status not_present when the segment does
not contain it), status (found, not_present or ambiguous), confidence and the verbatim snippet the
value comes from. Extract only from the document text."""


@dataclass(frozen=True)
class FewShotExample:
    """A document a clinician corrected, shown to the model as a labelled example."""

    key: int  # its ground-truth id, recorded on the run
    label: str
    text: str


class NamedField(FieldValue):
    """One field of a segment's template, as extract_fields answers it, with its name."""

    name: str


class SegmentFields(BaseModel):
    start_page: int
    end_page: int
    doc_type: DocType
    fields: list[NamedField] = Field(default_factory=list)


class ClassificationWithFields(ClassificationOutput):
    segment_fields: list[SegmentFields] = Field(
        default_factory=list, description="Each segment's fields, from its type's template."
    )


class GeminiClassifier:
    name = "gemini"

    def __init__(
        self,
        client: LLMClient,
        *,
        templates: Sequence[Template] = (),
        examples: Sequence[FewShotExample] = (),
    ) -> None:
        self.client = client
        # Runs record who classified: the provider (a scripted test client is "gemini").
        self.name = str(getattr(client, "provider", "gemini"))
        self.templates = tuple(templates)
        self.examples = tuple(examples)
        self.system = SYSTEM_PROMPT
        if self.templates:
            listing = "\n\n".join(
                f"Template for {t.doc_type}:\n{base_prompt(t)}" for t in self.templates
            )
            self.system = f"{SYSTEM_PROMPT}\n\n{FIELDS_PROMPT}\n\n{listing}"
        self._version = prompt_version("classify", self.system, CONFIDENCE_RUBRIC)

    @property
    def model(self) -> str:
        return self.client.model

    @property
    def prompt_version(self) -> str:
        return self._version

    def prompt(self, pages: list[str], feedback: str | None = None) -> str:
        block = delimit(pages)
        task = "Classify the document above."
        if self.templates:
            task += " Fill segment_fields for every segment."
        prompt = block.text
        if self.examples:
            shown = [(e.label, e.text) for e in self.examples]
            prompt += "\n\n" + examples_block(shown, block.token)
            task += " The corrected examples are reference only: classify the document itself."
        prompt = f"{prompt}\n\n{task}"
        if feedback:
            prompt += "\n\n" + feedback_block(feedback, block.token)
        return prompt

    def classify_with_fields(
        self, pages: list[str], feedback: str | None = None
    ) -> tuple[ClassificationOutput, list[SegmentFields]]:
        """The classification and, with templates, each segment's fields (one call)."""
        schema: type[ClassificationOutput] = (
            ClassificationWithFields if self.templates else ClassificationOutput
        )
        answer = self.client.generate(
            prompt=self.prompt(pages, feedback),
            schema=schema,
            system=self.system,
            operation="classify",
            version=self._version,
        )
        if isinstance(answer, ClassificationWithFields):
            fields = list(answer.segment_fields)
            output = ClassificationOutput.model_validate(
                answer.model_dump(exclude={"segment_fields"})
            )
            return output, fields
        return answer, []

    def classify(self, pages: list[str], feedback: str | None = None) -> ClassificationOutput:
        return self.classify_with_fields(pages, feedback)[0]
