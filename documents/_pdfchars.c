/*
 * documents._pdfchars: the PDFium reader's per-character loop in C (optional; see pdftext.py).
 *
 * page_lines() does what pdftext.page_chars() followed by pdftext.text_lines() do, for pages
 * whose glyphs are all upright (sheared and upside-down glyphs included), and gives the same
 * lines and word boxes: the same double arithmetic in the same order (built with
 * -ffp-contract=off), the same comparisons, the same stable orders. A page it does not handle
 * (text that is not upright, characters outside the Basic Multilingual Plane, a box that is not
 * a finite number) gives None, and the caller reads it with the Python code, which stays the
 * reference. fractions() is pdftext.word_fractions. The PDFium functions are the ones
 * pypdfium2 loaded: bind() takes their addresses once, so this module links against nothing
 * but Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifdef __FAST_MATH__
#error "the C loop must round as Python does: build it without -ffast-math or -Ofast"
#endif
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    float a, b, c, d, e, f;
} FS_MATRIX;

typedef struct {
    float left, top, right, bottom;
} FS_RECTF;

typedef int (*get_text_t)(void *, int, int, unsigned short *);
typedef void *(*get_text_object_t)(void *, int);
typedef int (*get_char_origin_t)(void *, int, double *, double *);
typedef int (*get_matrix_t)(void *, int, FS_MATRIX *);
typedef double (*get_font_size_t)(void *, int);
typedef void *(*get_font_t)(void *);
typedef int (*get_glyph_width_t)(void *, uint32_t, float, float *);
typedef int (*get_loose_char_box_t)(void *, int, FS_RECTF *);
typedef int (*is_generated_t)(void *, int);

static get_text_t get_text;
static get_text_object_t get_text_object;
static get_char_origin_t get_char_origin;
static get_matrix_t get_matrix;
static get_font_size_t get_font_size;
static get_font_t get_font;
static get_glyph_width_t get_glyph_width;
static get_loose_char_box_t get_loose_char_box;
static is_generated_t is_generated;
static int bound;

#define X_TOLERANCE 3.0
#define Y_TOLERANCE 3.0

/* A kept character: its text is text[start:start + length] of the page's code points. */
typedef struct {
    double x0, top, x1, bottom;
    Py_ssize_t start, length;
} Char;

/* A font seen on the page: its descent at size 1 and the advance widths looked up so far. */
typedef struct {
    void *font;
    double descent;
    double ascii[256]; /* NAN: not looked up yet */
    PyObject *others;  /* dict: code point -> width, for code points from 256 */
} Font;

typedef struct {
    Char *chars;
    Py_ssize_t count, capacity;
    Py_UCS4 *text;
    Py_ssize_t text_length, text_capacity;
    Font *fonts;
    Py_ssize_t font_count, font_capacity;
} Page;

static void page_free(Page *page) {
    for (Py_ssize_t i = 0; i < page->font_count; i++) {
        Py_XDECREF(page->fonts[i].others);
    }
    PyMem_Free(page->chars);
    PyMem_Free(page->text);
    PyMem_Free(page->fonts);
}

static int grow(void **items, Py_ssize_t *capacity, Py_ssize_t needed, size_t size) {
    if (needed <= *capacity) {
        return 0;
    }
    Py_ssize_t wanted = *capacity ? *capacity : 64;
    while (wanted < needed) {
        wanted *= 2;
    }
    void *grown = PyMem_Realloc(*items, (size_t)wanted * size);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *items = grown;
    *capacity = wanted;
    return 0;
}

static int append_text(Page *page, Py_UCS4 code) {
    if (grow((void **)&page->text, &page->text_capacity, page->text_length + 1, sizeof(Py_UCS4))) {
        return -1;
    }
    page->text[page->text_length++] = code;
    return 0;
}

/* The page's font for a text object's font handle, its descent read through descent_of. */
static Font *font_of(Page *page, void *font, PyObject *descent_of) {
    for (Py_ssize_t i = 0; i < page->font_count; i++) {
        if (page->fonts[i].font == font) {
            return &page->fonts[i];
        }
    }
    PyObject *result = font ? PyObject_CallFunction(descent_of, "K", (unsigned long long)(uintptr_t)font)
                            : PyFloat_FromDouble(0.0);
    if (result == NULL) {
        return NULL;
    }
    double descent = PyFloat_AsDouble(result);
    Py_DECREF(result);
    if (descent == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    if (grow((void **)&page->fonts, &page->font_capacity, page->font_count + 1, sizeof(Font))) {
        return NULL;
    }
    Font *entry = &page->fonts[page->font_count];
    entry->others = PyDict_New();
    if (entry->others == NULL) {
        return NULL;
    }
    entry->font = font;
    entry->descent = descent;
    for (int i = 0; i < 256; i++) {
        entry->ascii[i] = NAN;
    }
    page->font_count++;
    return entry;
}

/* The advance width of a code point at size 1: the font's /Widths, else the glyph's loose box
 * divided by the advance scale; the first answer for a code point holds for the whole page.
 * Returns 0 with *width set, 1 when the width is not a number (left to the Python code), -1
 * on error. */
static int width_of(Font *font, Py_UCS4 code, void *text_page, int index, double advance_scale,
                    FS_RECTF *rect, double *width) {
    PyObject *key = NULL;
    if (code < 256) {
        if (!isnan(font->ascii[code])) {
            *width = font->ascii[code];
            return 0;
        }
    } else {
        key = PyLong_FromUnsignedLong(code);
        if (key == NULL) {
            return -1;
        }
        PyObject *known = PyDict_GetItemWithError(font->others, key);
        if (known != NULL) {
            *width = PyFloat_AS_DOUBLE(known);
            Py_DECREF(key);
            return 0;
        }
        if (PyErr_Occurred()) {
            Py_DECREF(key);
            return -1;
        }
    }
    float glyph_width = 0.0f;
    double value;
    if (font->font && get_glyph_width(font->font, (uint32_t)code, 1.0f, &glyph_width)) {
        value = (double)glyph_width;
    } else {
        get_loose_char_box(text_page, index, rect);
        value = advance_scale ? ((double)rect->right - (double)rect->left) / advance_scale : 0.0;
    }
    if (isnan(value)) {
        Py_XDECREF(key);
        return 1;
    }
    if (key == NULL) {
        font->ascii[code] = value;
    } else {
        PyObject *boxed = PyFloat_FromDouble(value);
        int failed = boxed == NULL || PyDict_SetItem(font->others, key, boxed) < 0;
        Py_XDECREF(boxed);
        Py_DECREF(key);
        if (failed) {
            return -1;
        }
    }
    *width = value;
    return 0;
}

/* Sets a text object's [first, last] last character index. */
static int set_last(PyObject *span, int value) {
    PyObject *end = PyLong_FromLong(value);
    if (end == NULL) {
        return -1;
    }
    PyObject *old = PyList_GET_ITEM(span, 1);
    PyList_SET_ITEM(span, 1, end);
    Py_DECREF(old);
    return 0;
}

static int finite_box(double x0, double top, double x1, double bottom) {
    return isfinite(x0) && isfinite(top) && isfinite(x1) && isfinite(bottom);
}

static int is_space(const Page *page, const Char *ch) {
    /* str.isspace(): a ligature's merged text holds a letter, so only one code point can be. */
    return ch->length == 1 && Py_UNICODE_ISSPACE(page->text[ch->start]);
}

/* pdftext._turned_box: the bounds (x0, y0, x1, y1) of the corners of (0, descent) -
 * (advance, descent + 1) in text space, taken in the same order with the same comparisons. */
static void turned_box(double px, double py, const double matrix[4], double width, double descent,
                       double box[4]) {
    const double us[2] = {0.0, width}, vs[2] = {descent, descent + 1.0};
    int first = 1;
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 2; j++) {
            double x = px + matrix[0] * us[i] + matrix[2] * vs[j];
            double y = py + matrix[1] * us[i] + matrix[3] * vs[j];
            if (first) {
                box[0] = box[2] = x;
                box[1] = box[3] = y;
                first = 0;
                continue;
            }
            if (x < box[0]) box[0] = x;
            if (y < box[1]) box[1] = y;
            if (x > box[2]) box[2] = x;
            if (y > box[3]) box[3] = y;
        }
    }
}

/* Reads the kept characters (pdftext.page_chars without its check of dropped objects).
 * Returns 1 when read, 0 when the page is one for the Python code, -1 on error. The objects
 * dict gets each text object's address -> [first, last] character index on the text page. */
static int read_chars(Page *page, void *text_page, int count, const double transform[6],
                      double bbox_left, double base, PyObject *descent_of, PyObject *objects) {
    unsigned short *units = PyMem_Malloc(((size_t)count + 1) * sizeof(unsigned short));
    if (units == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(units, 0, ((size_t)count + 1) * sizeof(unsigned short));
    get_text(text_page, 0, count, units);
    /* The Python code reads the page one character at a time when its text holds surrogates
     * (characters outside the Basic Multilingual Plane): leave such a page to it. */
    for (int i = 0; i < count; i++) {
        if (units[i] >= 0xD800 && units[i] <= 0xDFFF) {
            PyMem_Free(units);
            return 0;
        }
    }
    const double a = transform[0], b = transform[1], c = transform[2], d = transform[3];
    const double e = transform[4], f = transform[5];
    const double left = e + bbox_left;
    const int unrotated = a == 1 && b == 0 && c == 0 && d == 1;
    FS_MATRIX matrix = {0, 0, 0, 0, 0, 0};
    FS_RECTF rect = {0, 0, 0, 0};
    double origin_x = 0.0, origin_y = 0.0;
    void *current = NULL, *last_key = NULL;
    Font *font = NULL;
    double size = 0.0, descent = 0.0, advance_scale = 0.0;
    int turned = 0;
    double text_matrix[4] = {1.0, 0.0, 0.0, 1.0};
    double last_ox = NAN, last_oy = NAN;
    int last_kept = 0;
    PyObject *span = NULL; /* the current object's [first, last] */
    int result = -1;
    if (grow((void **)&page->chars, &page->capacity, count, sizeof(Char)) ||
        grow((void **)&page->text, &page->text_capacity, count, sizeof(Py_UCS4))) {
        goto done;
    }
    for (int index = 0; index < count; index++) {
        Py_UCS4 code = units[index];
        if (!(code >= '!' && code <= '~')) {
            if (code == 0x02 || code == 0xFFFE) {
                code = '-'; /* PDFium's mark for a hyphen that ends a line */
            }
            if (code == '\r' || code == '\n' || code == 0) {
                continue;
            }
            if (Py_UNICODE_ISSPACE(code) && is_generated(text_page, index)) {
                continue;
            }
        }
        void *key = get_text_object(text_page, index);
        if (key == NULL) {
            continue;
        }
        if (key != current) {
            if (span != NULL && set_last(span, last_kept)) {
                goto done;
            }
            current = key;
            PyObject *address = PyLong_FromVoidPtr(key);
            if (address == NULL) {
                goto done;
            }
            span = PyDict_GetItemWithError(objects, address);
            if (span == NULL) {
                if (PyErr_Occurred()) {
                    Py_DECREF(address);
                    goto done;
                }
                span = Py_BuildValue("[iin]", index, index, page->count);
                if (span == NULL || PyDict_SetItem(objects, address, span) < 0) {
                    Py_XDECREF(span);
                    Py_DECREF(address);
                    goto done;
                }
                Py_DECREF(span); /* the dict holds it */
            }
            Py_DECREF(address); /* an object met again keeps its first, gets a new last */
            get_matrix(text_page, index, &matrix);
            double font_size = get_font_size(text_page, index);
            double ma = (double)matrix.a * a + (double)matrix.b * c;
            double mb = (double)matrix.a * b + (double)matrix.b * d;
            double mc = (double)matrix.c * a + (double)matrix.d * c;
            double md = (double)matrix.c * b + (double)matrix.d * d;
            if (!(ma * md > 0 && mb * mc <= 0)) {
                result = 0; /* not upright: words read top to bottom by the Python code */
                goto done;
            }
            double scale = pow(mc * mc + md * md, 0.5);
            size = font_size * scale;
            advance_scale = font_size * pow(ma * ma + mb * mb, 0.5);
            font = font_of(page, get_font(key), descent_of);
            if (font == NULL) {
                goto done;
            }
            descent = font->descent * size;
            /* Sheared (synthetic italic) or mirrored: boxed around the corners of its cell. */
            turned = !(mb == 0.0 && mc == 0.0 && ma > 0.0 && md > 0.0);
            text_matrix[0] = ma * font_size;
            text_matrix[1] = mb * font_size;
            text_matrix[2] = mc * font_size;
            text_matrix[3] = md * font_size;
        }
        get_char_origin(text_page, index, &origin_x, &origin_y);
        double ox = origin_x, oy = origin_y;
        double width;
        int unknown = width_of(font, code, text_page, index, advance_scale, &rect, &width);
        if (unknown) {
            result = unknown > 0 ? 0 : -1;
            goto done;
        }
        if (ox == last_ox && oy == last_oy && key == last_key && Py_UNICODE_ISALPHA(code)) {
            /* A ligature glyph split into its letters at one origin: one character, as pdfminer
             * keeps it, whose advance is the glyph's loose box. */
            get_loose_char_box(text_page, index, &rect);
            Char *previous = &page->chars[page->count - 1];
            if (append_text(page, code)) {
                goto done;
            }
            previous->length++;
            double reach = previous->x0 + ((double)rect.right - (double)rect.left) * fabs(a + b);
            if (reach > previous->x1) {
                previous->x1 = reach;
            }
            if (!isfinite(previous->x1)) {
                result = 0;
                goto done;
            }
            last_kept = index;
            continue;
        }
        last_key = key;
        last_ox = ox;
        last_oy = oy;
        last_kept = index;
        Char *ch = &page->chars[page->count++];
        if (turned) {
            double box[4];
            turned_box(a * ox + c * oy + e, b * ox + d * oy + f, text_matrix, width,
                       font->descent, box);
            ch->x0 = box[0] + bbox_left;
            ch->top = base + f - box[3];
            ch->x1 = box[2] + bbox_left;
            ch->bottom = base + f - box[1];
        } else {
            double x0, bottom;
            if (unrotated) {
                x0 = ox + left;
                bottom = base - oy - descent;
            } else {
                x0 = a * ox + c * oy + left;
                bottom = base - (b * ox + d * oy) - descent;
            }
            ch->x0 = x0;
            ch->top = bottom - size;
            ch->x1 = x0 + width * advance_scale;
            ch->bottom = bottom;
        }
        ch->start = page->text_length;
        ch->length = 1;
        if (!finite_box(ch->x0, ch->top, ch->x1, ch->bottom)) {
            result = 0;
            goto done;
        }
        if (append_text(page, code)) {
            goto done;
        }
    }
    if (span != NULL && set_last(span, last_kept)) {
        goto done;
    }
    result = 1;
done:
    PyMem_Free(units);
    return result;
}

/* Word spaces drawn alone (pdftext._dropped_objects): blanks is a list of (position, x0, top,
 * x1, bottom), each put before the character at position (-1: after the last), in list order
 * among those at one position. Returns 1, 0 for a box that is not finite, -1 on error. */
typedef struct {
    Py_ssize_t position, order;
    double x0, top, x1, bottom;
} Blank;

static int compare_blanks(const void *left, const void *right) {
    const Blank *x = left, *y = right;
    if (x->position != y->position) {
        return x->position < y->position ? -1 : 1;
    }
    return (x->order > y->order) - (x->order < y->order);
}

static int insert_blanks(Page *page, PyObject *blanks) {
    /* A tuple: no callback below can shrink it while its items are read. */
    PyObject *items = PySequence_Tuple(blanks);
    if (items == NULL) {
        return -1;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(items);
    if (count == 0) {
        Py_DECREF(items);
        return 1;
    }
    Blank *inserted = PyMem_Malloc((size_t)count * sizeof(Blank));
    Char *merged = PyMem_Malloc((size_t)(page->count + count) * sizeof(Char));
    int result = -1;
    if (inserted == NULL || merged == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        Blank *blank = &inserted[i];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(items, i), "ndddd", &blank->position,
                              &blank->x0, &blank->top, &blank->x1, &blank->bottom)) {
            goto done;
        }
        if (blank->position < 0 || blank->position > page->count) {
            blank->position = page->count;
        }
        blank->order = i;
        if (!finite_box(blank->x0, blank->top, blank->x1, blank->bottom)) {
            result = 0;
            goto done;
        }
    }
    qsort(inserted, (size_t)count, sizeof(Blank), compare_blanks);
    Py_ssize_t next = 0, length = 0;
    for (Py_ssize_t position = 0; position <= page->count; position++) {
        for (; next < count && inserted[next].position == position; next++) {
            if (append_text(page, ' ')) {
                goto done;
            }
            Char *ch = &merged[length++];
            ch->x0 = inserted[next].x0;
            ch->top = inserted[next].top;
            ch->x1 = inserted[next].x1;
            ch->bottom = inserted[next].bottom;
            ch->start = page->text_length - 1;
            ch->length = 1;
        }
        if (position < page->count) {
            merged[length++] = page->chars[position];
        }
    }
    PyMem_Free(page->chars);
    page->chars = merged;
    page->count = page->capacity = length;
    merged = NULL;
    result = 1;
done:
    PyMem_Free(inserted);
    PyMem_Free(merged);
    Py_DECREF(items);
    return result;
}

/* pdfplumber's cluster_list: the sorted distinct values, a new cluster wherever a value lies
 * more than the tolerance above the one before. ids[i] is the cluster of values[i]. */
static int compare_doubles(const void *left, const void *right) {
    double x = *(const double *)left, y = *(const double *)right;
    return (x > y) - (x < y);
}

static int cluster(const double *values, Py_ssize_t count, double tolerance, Py_ssize_t *ids) {
    double *sorted = PyMem_Malloc((size_t)(count ? count : 1) * sizeof(double));
    Py_ssize_t *groups = PyMem_Malloc((size_t)(count ? count : 1) * sizeof(Py_ssize_t));
    if (sorted == NULL || groups == NULL) {
        PyMem_Free(sorted);
        PyMem_Free(groups);
        PyErr_NoMemory();
        return -1;
    }
    memcpy(sorted, values, (size_t)count * sizeof(double));
    qsort(sorted, (size_t)count, sizeof(double), compare_doubles);
    Py_ssize_t distinct = 0, group = -1;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (distinct && sorted[i] == sorted[distinct - 1]) {
            continue;
        }
        if (!distinct || sorted[i] > sorted[distinct - 1] + tolerance) {
            group++;
        }
        sorted[distinct] = sorted[i];
        groups[distinct++] = group;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t low = 0, high = distinct - 1;
        while (low < high) {
            Py_ssize_t middle = (low + high) / 2;
            if (sorted[middle] < values[i]) {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        ids[i] = groups[low];
    }
    PyMem_Free(sorted);
    PyMem_Free(groups);
    return 0;
}

/* Orders character indexes by (cluster, x0), keeping content order among equals: the
 * stable sorts of pdftext._words. */
typedef struct {
    Py_ssize_t cluster;
    double x0;
    Py_ssize_t position;
} Slot;

static int compare_slots(const void *left, const void *right) {
    const Slot *x = left, *y = right;
    if (x->cluster != y->cluster) {
        return x->cluster < y->cluster ? -1 : 1;
    }
    if (x->x0 != y->x0) {
        return x->x0 < y->x0 ? -1 : 1;
    }
    return (x->position > y->position) - (x->position < y->position);
}

/* pdftext.LIGATURES, as pdfplumber expands them. */
static const char *ligature(Py_UCS4 code) {
    switch (code) {
    case 0xFB00: return "ff";
    case 0xFB03: return "ffi";
    case 0xFB04: return "ffl";
    case 0xFB01: return "fi";
    case 0xFB02: return "fl";
    case 0xFB06: return "st";
    case 0xFB05: return "st";
    default: return NULL;
    }
}

typedef struct {
    Py_ssize_t first, end; /* its characters: order[first:end] */
    double x0, top, x1, bottom;
} Word;

static PyObject *word_text(const Page *page, const Slot *order, const Word *word, Py_UCS4 *buffer) {
    Py_ssize_t length = 0;
    for (Py_ssize_t i = word->first; i < word->end; i++) {
        const Char *ch = &page->chars[order[i].position];
        const char *expanded = ch->length == 1 ? ligature(page->text[ch->start]) : NULL;
        if (expanded != NULL) {
            for (const char *letter = expanded; *letter; letter++) {
                buffer[length++] = (Py_UCS4)*letter;
            }
        } else {
            memcpy(buffer + length, page->text + ch->start, (size_t)ch->length * sizeof(Py_UCS4));
            length += ch->length;
        }
    }
    return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buffer, length);
}

/* pdftext._words and pdftext.text_lines on upright characters: a list of
 * (text, x0, top, bottom, words), each word (text, x0, top, x1, bottom). */
static PyObject *group_lines(const Page *page) {
    Py_ssize_t n = page->count;
    PyObject *lines = PyList_New(0);
    if (lines == NULL || n == 0) {
        return lines;
    }
    double *values = PyMem_Malloc((size_t)n * sizeof(double));
    Py_ssize_t *ids = PyMem_Malloc((size_t)n * sizeof(Py_ssize_t));
    Slot *order = PyMem_Malloc((size_t)n * sizeof(Slot));
    Word *words = PyMem_Malloc((size_t)n * sizeof(Word));
    /* Expanded text is at most three code points per code point. */
    Py_UCS4 *buffer = PyMem_Malloc(((size_t)page->text_length * 3 + 1) * sizeof(Py_UCS4));
    PyObject **texts = NULL, *space = NULL, *result = NULL;
    Py_ssize_t word_count = 0;
    if (values == NULL || ids == NULL || order == NULL || words == NULL || buffer == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        values[i] = page->chars[i].top;
    }
    if (cluster(values, n, Y_TOLERANCE, ids)) {
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        order[i].cluster = ids[i];
        order[i].x0 = page->chars[i].x0;
        order[i].position = i;
    }
    qsort(order, (size_t)n, sizeof(Slot), compare_slots);
    /* Words: a blank or a gap ends one (pdftext._upright_words), never across lines. */
    Py_ssize_t start = -1;
    const Char *previous = NULL;
    for (Py_ssize_t i = 0; i <= n; i++) {
        const Char *ch = i < n ? &page->chars[order[i].position] : NULL;
        int ends = ch == NULL || is_space(page, ch) || (i > 0 && order[i].cluster != order[i - 1].cluster);
        if (!ends && previous != NULL &&
            (ch->x0 < previous->x0 || ch->x0 > previous->x1 + X_TOLERANCE ||
             fabs(ch->top - previous->top) > Y_TOLERANCE)) {
            ends = 1;
        }
        if (ends && start >= 0) {
            Word *word = &words[word_count++];
            word->first = start;
            word->end = i;
            start = -1;
        }
        if (ch == NULL) {
            break;
        }
        if (is_space(page, ch)) {
            previous = NULL;
            continue;
        }
        if (start < 0) {
            start = i;
        }
        previous = ch;
    }
    for (Py_ssize_t w = 0; w < word_count; w++) {
        Word *word = &words[w];
        const Char *ch = &page->chars[order[word->first].position];
        word->x0 = ch->x0;
        word->top = ch->top;
        word->x1 = ch->x1;
        word->bottom = ch->bottom;
        for (Py_ssize_t i = word->first + 1; i < word->end; i++) {
            ch = &page->chars[order[i].position];
            if (ch->x0 < word->x0) word->x0 = ch->x0;
            if (ch->top < word->top) word->top = ch->top;
            if (ch->x1 > word->x1) word->x1 = ch->x1;
            if (ch->bottom > word->bottom) word->bottom = ch->bottom;
        }
        values[w] = word->top;
    }
    if (cluster(values, word_count, Y_TOLERANCE, ids)) {
        goto fail;
    }
    texts = PyMem_Calloc((size_t)(word_count ? word_count : 1), sizeof(PyObject *));
    if (texts == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t w = 0; w < word_count; w++) {
        texts[w] = word_text(page, order, &words[w], buffer);
        if (texts[w] == NULL) {
            goto fail;
        }
    }
    space = PyUnicode_FromOrdinal(' ');
    if (space == NULL) {
        goto fail;
    }
    for (Py_ssize_t first = 0; first < word_count;) {
        Py_ssize_t end = first + 1;
        while (end < word_count && ids[end] == ids[first]) {
            end++;
        }
        PyObject *boxes = PyTuple_New(end - first);
        PyObject *parts = PyList_New(end - first);
        if (boxes == NULL || parts == NULL) {
            Py_XDECREF(boxes);
            Py_XDECREF(parts);
            goto fail;
        }
        double x0 = words[first].x0, top = words[first].top, bottom = words[first].bottom;
        for (Py_ssize_t w = first; w < end; w++) {
            const Word *word = &words[w];
            if (word->x0 < x0) x0 = word->x0;
            if (word->top < top) top = word->top;
            if (word->bottom > bottom) bottom = word->bottom;
            Py_INCREF(texts[w]);
            PyList_SET_ITEM(parts, w - first, texts[w]);
            PyObject *box = Py_BuildValue("(Odddd)", texts[w], word->x0, word->top, word->x1, word->bottom);
            if (box == NULL) {
                Py_DECREF(boxes);
                Py_DECREF(parts);
                goto fail;
            }
            PyTuple_SET_ITEM(boxes, w - first, box);
        }
        PyObject *joined = PyUnicode_Join(space, parts);
        Py_DECREF(parts);
        PyObject *text = joined ? PyObject_CallMethod(joined, "strip", "s", " ") : NULL;
        Py_XDECREF(joined);
        if (text == NULL) {
            Py_DECREF(boxes);
            goto fail;
        }
        if (PyUnicode_GET_LENGTH(text) > 0) {
            PyObject *line = Py_BuildValue("(NdddN)", text, x0, top, bottom, boxes);
            if (line == NULL || PyList_Append(lines, line) < 0) {
                Py_XDECREF(line);
                goto fail;
            }
            Py_DECREF(line);
        } else {
            Py_DECREF(text);
            Py_DECREF(boxes);
        }
        first = end;
    }
    result = lines;
    lines = NULL;
fail: /* and done: what is left to free */
    Py_XDECREF(space);
    if (texts != NULL) {
        for (Py_ssize_t w = 0; w < word_count; w++) {
            Py_XDECREF(texts[w]);
        }
        PyMem_Free(texts);
    }
    PyMem_Free(values);
    PyMem_Free(ids);
    PyMem_Free(order);
    PyMem_Free(words);
    PyMem_Free(buffer);
    Py_XDECREF(lines);
    return result;
}

/* round(min(1.0, max(0.0, value)), 4), bit for bit: away from a tie the product by 10,000 is
 * within 1e-12 of the exact one and its nearest integer is the right one, and the quotient of
 * two exact integers is the double nearest the decimal; near a tie Python's own algorithm
 * (correctly rounded decimal digits, read back) decides. */
static int fraction(double value, double *out) {
    double x = value > 0.0 ? value : 0.0;
    x = x < 1.0 ? x : 1.0;
    double scaled = x * 10000.0;
    double whole = floor(scaled);
    double rest = scaled - whole;
    if (fabs(rest - 0.5) > 1e-6) {
        *out = (rest < 0.5 ? whole : whole + 1.0) / 10000.0;
        return 0;
    }
    char *digits = PyOS_double_to_string(x, 'f', 4, 0, NULL);
    if (digits == NULL) {
        return -1;
    }
    *out = PyOS_string_to_double(digits, NULL, NULL);
    PyMem_Free(digits);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *fractions(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *words;
    double left, upper, width, height;
    if (!PyArg_ParseTuple(args, "Odddd", &words, &left, &upper, &width, &height)) {
        return NULL;
    }
    PyObject *items = PySequence_Tuple(words);
    if (items == NULL) {
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(items);
    PyObject *result = PyList_New(count);
    if (result == NULL) {
        Py_DECREF(items);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *word = PyTuple_GET_ITEM(items, i);
        if (!PyTuple_Check(word) || PyTuple_GET_SIZE(word) != 5) {
            PyErr_SetString(PyExc_TypeError, "a word is (text, x0, top, x1, bottom)");
            goto fail;
        }
        double box[4];
        for (int j = 0; j < 4; j++) {
            box[j] = PyFloat_AsDouble(PyTuple_GET_ITEM(word, j + 1));
            if (box[j] == -1.0 && PyErr_Occurred()) {
                goto fail;
            }
        }
        double x0, top, x1, bottom;
        if (fraction((box[0] - left) / width, &x0) || fraction((box[1] - upper) / height, &top) ||
            fraction((box[2] - left) / width, &x1) || fraction((box[3] - upper) / height, &bottom)) {
            goto fail;
        }
        PyObject *fractioned = Py_BuildValue("(Odddd)", PyTuple_GET_ITEM(word, 0), x0, top, x1, bottom);
        if (fractioned == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(result, i, fractioned);
    }
    Py_DECREF(items);
    return result;
fail:
    Py_DECREF(items);
    Py_DECREF(result);
    return NULL;
}

static PyObject *bind(PyObject *self, PyObject *args) {
    (void)self;
    unsigned long long addresses[9];
    if (!PyArg_ParseTuple(args, "KKKKKKKKK", &addresses[0], &addresses[1], &addresses[2],
                          &addresses[3], &addresses[4], &addresses[5], &addresses[6],
                          &addresses[7], &addresses[8])) {
        return NULL;
    }
    for (int i = 0; i < 9; i++) {
        if (addresses[i] == 0) {
            PyErr_SetString(PyExc_ValueError, "a PDFium function address is 0");
            return NULL;
        }
    }
    get_text = (get_text_t)(uintptr_t)addresses[0];
    get_text_object = (get_text_object_t)(uintptr_t)addresses[1];
    get_char_origin = (get_char_origin_t)(uintptr_t)addresses[2];
    get_matrix = (get_matrix_t)(uintptr_t)addresses[3];
    get_font_size = (get_font_size_t)(uintptr_t)addresses[4];
    get_font = (get_font_t)(uintptr_t)addresses[5];
    get_glyph_width = (get_glyph_width_t)(uintptr_t)addresses[6];
    get_loose_char_box = (get_loose_char_box_t)(uintptr_t)addresses[7];
    is_generated = (is_generated_t)(uintptr_t)addresses[8];
    bound = 1;
    Py_RETURN_NONE;
}

static PyObject *page_lines(PyObject *self, PyObject *args) {
    (void)self;
    unsigned long long address;
    int count;
    double transform[6], bbox_left, base;
    PyObject *descent_of, *check;
    if (!PyArg_ParseTuple(args, "Ki(dddddd)ddOO", &address, &count, &transform[0], &transform[1],
                          &transform[2], &transform[3], &transform[4], &transform[5], &bbox_left,
                          &base, &descent_of, &check)) {
        return NULL;
    }
    if (!bound) {
        PyErr_SetString(PyExc_RuntimeError, "bind() the PDFium functions first");
        return NULL;
    }
    if (count < 0 || address == 0) {
        PyErr_SetString(PyExc_ValueError, "no text page");
        return NULL;
    }
    Page page;
    memset(&page, 0, sizeof(page));
    PyObject *objects = PyDict_New();
    if (objects == NULL) {
        return NULL;
    }
    int read = read_chars(&page, (void *)(uintptr_t)address, count, transform, bbox_left, base,
                          descent_of, objects);
    PyObject *result = NULL;
    if (read == 1) {
        /* check(objects) -> (blanks, exact), from the page's objects that PDFium left out. */
        PyObject *checked = PyObject_CallOneArg(check, objects);
        PyObject *blanks;
        int exact;
        if (checked != NULL && PyArg_ParseTuple(checked, "Op", &blanks, &exact)) {
            read = insert_blanks(&page, blanks);
            if (read == 1) {
                PyObject *lines = group_lines(&page);
                if (lines != NULL) {
                    result = Py_BuildValue("(NO)", lines, exact ? Py_True : Py_False);
                }
            }
        } else {
            read = -1;
        }
        Py_XDECREF(checked);
    }
    if (read == 0) {
        result = Py_NewRef(Py_None);
    }
    Py_DECREF(objects);
    page_free(&page);
    return result;
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS,
     "bind(get_text, get_text_object, get_char_origin, get_matrix, get_font_size, get_font, "
     "get_glyph_width, get_loose_char_box, is_generated): the PDFium functions' addresses."},
    {"page_lines", page_lines, METH_VARARGS,
     "page_lines(text_page, count, transform, bbox_left, base, descent_of, check) -> "
     "(lines, exact) or None"},
    {"fractions", fractions, METH_VARARGS,
     "fractions(words, left, upper, width, height) -> [(text, x0, top, x1, bottom)] as page "
     "fractions rounded to 4 places"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_pdfchars", NULL, -1, methods, NULL, NULL, NULL, NULL,
};

/* Raised with every change to what a function takes or gives: pdftext.py ignores a module
 * built from an older source (an install that was not rebuilt) and reads in Python. */
#define VERSION 1

PyMODINIT_FUNC PyInit__pdfchars(void) {
    PyObject *created = PyModule_Create(&module);
    if (created != NULL && PyModule_AddIntConstant(created, "VERSION", VERSION) < 0) {
        Py_DECREF(created);
        return NULL;
    }
    return created;
}
