from collections.abc import Callable, Sequence

VERSION: int

_Word = tuple[str, float, float, float, float]
_Line = tuple[str, float, float, float, tuple[_Word, ...]]

def bind(
    get_text: int,
    get_text_object: int,
    get_char_origin: int,
    get_matrix: int,
    get_font_size: int,
    get_font: int,
    get_glyph_width: int,
    get_loose_char_box: int,
    is_generated: int,
    /,
) -> None: ...
def page_lines(
    text_page: int,
    count: int,
    transform: tuple[float, float, float, float, float, float],
    bbox_left: float,
    base: float,
    descent_of: Callable[[int], float],
    check: Callable[
        [dict[int, list[int]]], tuple[list[tuple[int, float, float, float, float]], bool]
    ],
    /,
) -> tuple[list[_Line], bool] | None: ...
def fractions(
    words: Sequence[_Word], left: float, upper: float, width: float, height: float, /
) -> list[_Word]: ...
