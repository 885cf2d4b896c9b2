"""Template filters for review.words: `{% load review_words %}` then
``{{ value|type_name }}``, ``|field_status``, ``|field_label``, ``|classifier_name``,
``|presence``, ``|decision_words``, ``|with_type_names``."""

from __future__ import annotations

from django import template

from review import words

register = template.Library()

for _name in (
    "type_name",
    "field_status",
    "field_label",
    "classifier_name",
    "presence",
    "decision_words",
    "with_type_names",
    "issue_title",
):
    register.filter(_name, getattr(words, _name))
