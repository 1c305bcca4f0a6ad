// The NKI frontend's floating-point types as real numpy dtypes (Python module _trnsim_dtypes):
// bfloat16 and the 8-bit floats, each a numpy scalar type with its array functions, casts to
// and from numpy's numbers and the ufuncs a reference computation uses. Values convert to and
// from float32 rounding to nearest, ties to even, as the engines do (workloads/nki/python,
// _dtypes.py; docs/nki.md, "Data types"). Debian 12 has no ml_dtypes: this is what
// `ml_dtypes.bfloat16` and `nl.bfloat16` are when it is absent.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>
#include <numpy/ufuncobject.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "core/minifloat.h"

namespace {

using namespace trn::minifloat;

// One dtype: its scalar type, array functions and numpy registration.
struct custom {
    const char* name;  // numpy's and the module's name
    const char* doc;
    char type_char;
    int size;          // bytes: 1 or 2
    float_format fmt;  // (bfloat16 uses the bit-exact routines above)
    bool bf16;
    PyTypeObject type;
    PyArray_ArrFuncs funcs;
    PyArray_Descr* descr;
    int typenum;

    double to_double(std::uint32_t bits) const {
        return bf16 ? double(bf16_to_float(std::uint16_t(bits))) : decode(fmt, bits);
    }
    std::uint32_t from_double(double x) const {
        // through float32 first, as a device cast from float32 does
        return bf16 ? bf16_from_float(float(x)) : encode(fmt, double(float(x)));
    }
    std::uint32_t load(const void* p) const {
        if (size == 1) return *static_cast<const std::uint8_t*>(p);
        std::uint16_t v;
        std::memcpy(&v, p, 2);
        return v;
    }
    void store(void* p, std::uint32_t bits) const {
        if (size == 1) {
            *static_cast<std::uint8_t*>(p) = std::uint8_t(bits);
        } else {
            const std::uint16_t v = std::uint16_t(bits);
            std::memcpy(p, &v, 2);
        }
    }
};

// The types, by index: the C callbacks find their type through the descriptor or scalar type.
custom types[] = {
    {"bfloat16",
     "bfloat16: 8 exponent bits, 7 mantissa bits (the top half of a float32)",
     'E',
     2,
     {8, 7, 127, true, false},
     true,
     {},
     {},
     nullptr,
     -1},
    {"float8_e4m3",
     "float8_e4m3: 4 exponent bits, 3 mantissa bits, bias 7, IEEE infinities and "
     "NaNs (max 240)",
     'x',
     1,
     float8_e4m3,
     false,
     {},
     {},
     nullptr,
     -1},
    {"float8_e4m3fn",
     "float8_e4m3fn: 4 exponent bits, 3 mantissa bits, bias 7, no infinities, "
     "NaN = all ones (max 448)",
     'y',
     1,
     float8_e4m3fn,
     false,
     {},
     {},
     nullptr,
     -1},
    {"float8_e5m2",
     "float8_e5m2: 5 exponent bits, 2 mantissa bits, bias 15, IEEE infinities and "
     "NaNs (max 57344)",
     'z',
     1,
     float8_e5m2,
     false,
     {},
     {},
     nullptr,
     -1},
    {"float4_e2m1fn",
     "float4_e2m1fn: 2 exponent bits, 1 mantissa bit, bias 1, no infinities or NaNs "
     "(max 6), one per byte (as ml_dtypes holds it)",
     'w',
     1,
     float4_e2m1,
     false,
     {},
     {},
     nullptr,
     -1},
};
constexpr int type_count = sizeof(types) / sizeof(types[0]);

struct scalar {
    PyObject_HEAD std::uint32_t bits;
};

custom* of_type(PyTypeObject* t) {
    for (auto& c : types)
        if (t == &c.type || PyType_IsSubtype(t, &c.type)) return &c;
    return nullptr;
}

PyObject* make(custom& c, std::uint32_t bits) {
    scalar* s = reinterpret_cast<scalar*>(c.type.tp_alloc(&c.type, 0));
    if (s) s->bits = bits;
    return reinterpret_cast<PyObject*>(s);
}

// The value of a Python number or one of the scalars, as a double (false: not a number).
bool number(PyObject* o, double& v) {
    if (custom* c = of_type(Py_TYPE(o))) {
        v = c->to_double(reinterpret_cast<scalar*>(o)->bits);
        return true;
    }
    if (PyFloat_Check(o) || PyLong_Check(o) || PyArray_IsScalar(o, Number) ||
        PyArray_IsScalar(o, Bool)) {
        v = PyFloat_AsDouble(o);
        return !(v == -1 && PyErr_Occurred());
    }
    return false;
}

// Scalar type slots.

PyObject* scalar_new(PyTypeObject* t, PyObject* args, PyObject* kwds) {
    custom* c = of_type(t);
    PyObject* x = nullptr;
    if (kwds && PyDict_Size(kwds)) {
        PyErr_Format(PyExc_TypeError, "%s() takes no keyword arguments", c->name);
        return nullptr;
    }
    if (!PyArg_ParseTuple(args, "|O", &x)) return nullptr;
    if (!x) return make(*c, 0);
    if (Py_TYPE(x) == t) {
        Py_INCREF(x);
        return x;
    }
    if (PyUnicode_Check(x)) {
        PyObject* f = PyFloat_FromString(x);
        if (!f) return nullptr;
        const double v = PyFloat_AsDouble(f);
        Py_DECREF(f);
        return make(*c, c->from_double(v));
    }
    if (PyArray_Check(x))
        return PyArray_CastToType(reinterpret_cast<PyArrayObject*>(x),
                                  PyArray_DescrFromType(c->typenum), 0);
    double v;
    if (!number(x, v)) {
        PyErr_Format(PyExc_TypeError, "%s() needs a number, not %s", c->name, Py_TYPE(x)->tp_name);
        return nullptr;
    }
    return make(*c, c->from_double(v));
}

double value_of(PyObject* o) {
    custom* c = of_type(Py_TYPE(o));
    return c->to_double(reinterpret_cast<scalar*>(o)->bits);
}

PyObject* scalar_repr(PyObject* o) {
    PyObject* f = PyFloat_FromDouble(value_of(o));
    PyObject* r = PyObject_Repr(f);
    Py_DECREF(f);
    return r;
}

Py_hash_t scalar_hash(PyObject* o) {
    PyObject* f = PyFloat_FromDouble(value_of(o));
    const Py_hash_t h = PyObject_Hash(f);
    Py_DECREF(f);
    return h;
}

PyObject* scalar_float(PyObject* o) {
    return PyFloat_FromDouble(value_of(o));
}

PyObject* scalar_int(PyObject* o) {
    PyObject* f = PyFloat_FromDouble(value_of(o));
    PyObject* r = PyNumber_Long(f);
    Py_DECREF(f);
    return r;
}

int scalar_bool(PyObject* o) {
    return value_of(o) != 0;
}

// a <op> b: of one type, or of one type and a Python number, in that type; else a float.
template <typename Op>
PyObject* binary(PyObject* a, PyObject* b, Op op) {
    custom* ca = of_type(Py_TYPE(a));
    custom* cb = of_type(Py_TYPE(b));
    if (PyArray_Check(a) || PyArray_Check(b)) Py_RETURN_NOTIMPLEMENTED;
    double x, y;
    if (!number(a, x) || !number(b, y)) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    const double r = op(x, y);
    custom* c = ca && cb ? (ca == cb ? ca : nullptr)
                         : ((ca && (PyFloat_Check(b) || PyLong_Check(b)))   ? ca
                            : (cb && (PyFloat_Check(a) || PyLong_Check(a))) ? cb
                                                                            : nullptr);
    if (c) return make(*c, c->from_double(r));
    return PyFloat_FromDouble(r);
}

PyObject* nb_add(PyObject* a, PyObject* b) {
    return binary(a, b, [](double x, double y) { return x + y; });
}
PyObject* nb_sub(PyObject* a, PyObject* b) {
    return binary(a, b, [](double x, double y) { return x - y; });
}
PyObject* nb_mul(PyObject* a, PyObject* b) {
    return binary(a, b, [](double x, double y) { return x * y; });
}
PyObject* nb_div(PyObject* a, PyObject* b) {
    return binary(a, b, [](double x, double y) { return x / y; });
}
PyObject* nb_neg(PyObject* a) {
    custom* c = of_type(Py_TYPE(a));
    return make(*c, c->from_double(-value_of(a)));
}
PyObject* nb_pos(PyObject* a) {
    Py_INCREF(a);
    return a;
}
PyObject* nb_abs(PyObject* a) {
    custom* c = of_type(Py_TYPE(a));
    return make(*c, c->from_double(std::fabs(value_of(a))));
}

PyObject* scalar_compare(PyObject* a, PyObject* b, int op) {
    double x, y;
    if (PyArray_Check(b) || !number(a, x) || !number(b, y)) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    bool r = false;
    switch (op) {
        case Py_LT:
            r = x < y;
            break;
        case Py_LE:
            r = x <= y;
            break;
        case Py_EQ:
            r = x == y;
            break;
        case Py_NE:
            r = x != y;
            break;
        case Py_GT:
            r = x > y;
            break;
        case Py_GE:
            r = x >= y;
            break;
    }
    return PyBool_FromLong(r);
}

PyNumberMethods number_methods = {};

// Array functions, one set per type (numpy may call them with no array at hand).

bool swapped(void* arr) {
    return arr && !PyArray_ISNOTSWAPPED(static_cast<PyArrayObject*>(arr));
}

template <int I>
PyObject* getitem(void* data, void* arr) {
    custom& c = types[I];
    std::uint32_t bits = c.load(data);
    if (c.size == 2 && swapped(arr)) bits = ((bits & 0xFF) << 8) | (bits >> 8);
    return make(c, bits);
}

template <int I>
int setitem(PyObject* item, void* data, void* arr) {
    custom& c = types[I];
    std::uint32_t bits;
    if (Py_TYPE(item) == &c.type) {
        bits = reinterpret_cast<scalar*>(item)->bits;
    } else {
        double v;
        if (!number(item, v)) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "expected a number for a %s array, got %s", c.name,
                             Py_TYPE(item)->tp_name);
            return -1;
        }
        bits = c.from_double(v);
    }
    if (c.size == 2 && swapped(arr)) bits = ((bits & 0xFF) << 8) | (bits >> 8);
    c.store(data, bits);
    return 0;
}

template <int I>
void copyswapn(void* dst, npy_intp dstride, void* src, npy_intp sstride, npy_intp n, int swap,
               void*) {
    const int size = types[I].size;
    if (!src) return;
    char* d = static_cast<char*>(dst);
    const char* s = static_cast<const char*>(src);
    for (npy_intp i = 0; i < n; ++i, d += dstride, s += sstride) {
        std::memmove(d, s, size);
        if (swap && size == 2) std::swap(d[0], d[1]);
    }
}

template <int I>
void copyswap(void* dst, void* src, int swap, void* arr) {
    copyswapn<I>(dst, 0, src, 0, 1, swap, arr);
}

template <int I>
int compare(const void* a, const void* b, void*) {
    const custom& c = types[I];
    const double x = c.to_double(c.load(a)), y = c.to_double(c.load(b));
    if (std::isnan(x)) return std::isnan(y) ? 0 : 1;  // NaNs sort last, as numpy's
    if (std::isnan(y)) return -1;
    return x < y ? -1 : (x > y ? 1 : 0);
}

template <int I, bool Max>
int argbest(void* data, npy_intp n, npy_intp* out, void*) {
    const custom& c = types[I];
    const char* p = static_cast<const char*>(data);
    double best =
        Max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    *out = 0;
    for (npy_intp i = 0; i < n; ++i) {
        const double v = c.to_double(c.load(p + i * c.size));
        if (std::isnan(v)) {  // the first NaN, as numpy's
            *out = i;
            return 0;
        }
        if (Max ? v > best : v < best) {
            best = v;
            *out = i;
        }
    }
    return 0;
}

template <int I>
npy_bool nonzero(void* data, void*) {
    const custom& c = types[I];
    return c.to_double(c.load(data)) != 0;
}

template <int I>
int fill(void* buffer, npy_intp length, void*) {
    const custom& c = types[I];
    char* p = static_cast<char*>(buffer);
    const double start = c.to_double(c.load(p));
    const double delta = c.to_double(c.load(p + c.size)) - start;
    for (npy_intp i = 2; i < length; ++i)
        c.store(p + i * c.size, c.from_double(start + double(i) * delta));
    return 0;
}

template <int I>
int fillwithscalar(void* buffer, npy_intp length, void* value, void*) {
    const custom& c = types[I];
    const std::uint32_t bits = c.load(value);
    for (npy_intp i = 0; i < length; ++i)
        c.store(static_cast<char*>(buffer) + i * c.size, bits);
    return 0;
}

template <int I>
void dot(void* a, npy_intp is1, void* b, npy_intp is2, void* op, npy_intp n, void*) {
    const custom& c = types[I];
    const char *ip1 = static_cast<const char*>(a), *ip2 = static_cast<const char*>(b);
    double acc = 0;
    for (npy_intp i = 0; i < n; ++i, ip1 += is1, ip2 += is2)
        acc += c.to_double(c.load(ip1)) * c.to_double(c.load(ip2));
    c.store(op, c.from_double(acc));
}

// Casts between a custom type and a numpy type T (contiguous, aligned buffers).
template <int I, typename T>
void cast_to(void* from, void* to, npy_intp n, void*, void*) {
    const custom& c = types[I];
    const char* f = static_cast<const char*>(from);
    T* t = static_cast<T*>(to);
    for (npy_intp i = 0; i < n; ++i)
        t[i] = static_cast<T>(c.to_double(c.load(f + i * c.size)));
}

template <int I, typename T>
void cast_from(void* from, void* to, npy_intp n, void*, void*) {
    const custom& c = types[I];
    const T* f = static_cast<const T*>(from);
    char* t = static_cast<char*>(to);
    for (npy_intp i = 0; i < n; ++i)
        c.store(t + i * c.size, c.from_double(double(f[i])));
}

// float16 through the generic format (numpy's own half routines are in a static library).

template <int I>
void cast_to_half(void* from, void* to, npy_intp n, void*, void*) {
    const custom& c = types[I];
    const char* f = static_cast<const char*>(from);
    npy_half* t = static_cast<npy_half*>(to);
    for (npy_intp i = 0; i < n; ++i)
        t[i] = npy_half(encode(trn::minifloat::float16, c.to_double(c.load(f + i * c.size))));
}

template <int I>
void cast_from_half(void* from, void* to, npy_intp n, void*, void*) {
    const custom& c = types[I];
    const npy_half* f = static_cast<const npy_half*>(from);
    char* t = static_cast<char*>(to);
    for (npy_intp i = 0; i < n; ++i)
        c.store(t + i * c.size, c.from_double(decode(trn::minifloat::float16, f[i])));
}

template <int I, int J>
void cast_custom(void* from, void* to, npy_intp n, void*, void*) {
    const custom &a = types[I], &b = types[J];
    const char* f = static_cast<const char*>(from);
    char* t = static_cast<char*>(to);
    for (npy_intp i = 0; i < n; ++i)
        b.store(t + i * b.size, b.from_double(a.to_double(a.load(f + i * a.size))));
}

template <int I, typename T>
bool register_casts(int numpy_type, bool safe_to, bool safe_from) {
    PyArray_Descr* d = types[I].descr;
    PyArray_Descr* other = PyArray_DescrFromType(numpy_type);
    if (PyArray_RegisterCastFunc(d, numpy_type, cast_to<I, T>) < 0) return false;
    if (PyArray_RegisterCastFunc(other, types[I].typenum, cast_from<I, T>) < 0) return false;
    if (safe_to && PyArray_RegisterCanCast(d, numpy_type, NPY_NOSCALAR) < 0) return false;
    if (safe_from && PyArray_RegisterCanCast(other, types[I].typenum, NPY_NOSCALAR) < 0)
        return false;
    return true;
}

// Ufunc loops, computed in double and rounded to the type.
template <int I, typename Op>
void unary_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
    const custom& c = types[I];
    char *in = args[0], *out = args[1];
    for (npy_intp i = 0; i < dims[0]; ++i, in += steps[0], out += steps[1])
        c.store(out, c.from_double(Op()(c.to_double(c.load(in)))));
}

template <int I, typename Op>
void binary_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
    const custom& c = types[I];
    char *a = args[0], *b = args[1], *out = args[2];
    for (npy_intp i = 0; i < dims[0]; ++i, a += steps[0], b += steps[1], out += steps[2])
        c.store(out, c.from_double(Op()(c.to_double(c.load(a)), c.to_double(c.load(b)))));
}

template <int I, typename Op>
void compare_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
    const custom& c = types[I];
    char *a = args[0], *b = args[1], *out = args[2];
    for (npy_intp i = 0; i < dims[0]; ++i, a += steps[0], b += steps[1], out += steps[2])
        *reinterpret_cast<npy_bool*>(out) = Op()(c.to_double(c.load(a)), c.to_double(c.load(b)));
}

template <int I, typename Op>
void predicate_loop(char** args, const npy_intp* dims, const npy_intp* steps, void*) {
    const custom& c = types[I];
    char *in = args[0], *out = args[1];
    for (npy_intp i = 0; i < dims[0]; ++i, in += steps[0], out += steps[1])
        *reinterpret_cast<npy_bool*>(out) = Op()(c.to_double(c.load(in)));
}

#define UNARY(name, expr)                                  \
    struct name {                                          \
        double operator()(double x) const { return expr; } \
    }
#define BINARY(name, expr)                                           \
    struct name {                                                    \
        double operator()(double x, double y) const { return expr; } \
    }
#define TEST1(name, expr)                                \
    struct name {                                        \
        bool operator()(double x) const { return expr; } \
    }
#define TEST2(name, expr)                                          \
    struct name {                                                  \
        bool operator()(double x, double y) const { return expr; } \
    }
UNARY(u_negative, -x);
UNARY(u_positive, x);
UNARY(u_absolute, std::fabs(x));
UNARY(u_sqrt, std::sqrt(x));
UNARY(u_square, x* x);
UNARY(u_exp, std::exp(x));
UNARY(u_log, std::log(x));
UNARY(u_tanh, std::tanh(x));
UNARY(u_reciprocal, 1.0 / x);
UNARY(u_rint, std::nearbyint(x));
UNARY(u_floor, std::floor(x));
UNARY(u_ceil, std::ceil(x));
UNARY(u_sign, x > 0 ? 1.0 : (x < 0 ? -1.0 : x));
BINARY(b_add, x + y);
BINARY(b_subtract, x - y);
BINARY(b_multiply, x* y);
BINARY(b_true_divide, x / y);
BINARY(b_power, std::pow(x, y));
BINARY(b_maximum, (std::isnan(x) || x >= y) ? x : y);
BINARY(b_minimum, (std::isnan(x) || x <= y) ? x : y);
BINARY(b_fmax, std::fmax(x, y));
BINARY(b_fmin, std::fmin(x, y));
TEST1(t_isnan, std::isnan(x));
TEST1(t_isinf, std::isinf(x));
TEST1(t_isfinite, std::isfinite(x));
TEST2(t_equal, x == y);
TEST2(t_not_equal, x != y);
TEST2(t_less, x < y);
TEST2(t_less_equal, x <= y);
TEST2(t_greater, x > y);
TEST2(t_greater_equal, x >= y);

bool add_loop(PyObject* numpy, const char* ufunc_name, int typenum, PyUFuncGenericFunction f,
              int nargs, bool boolean_result) {
    PyObject* u = PyObject_GetAttrString(numpy, ufunc_name);
    if (!u) return false;
    int args[3] = {typenum, typenum, typenum};
    if (boolean_result) args[nargs - 1] = NPY_BOOL;
    const int r =
        PyUFunc_RegisterLoopForType(reinterpret_cast<PyUFuncObject*>(u), typenum, f, args, nullptr);
    Py_DECREF(u);
    return r == 0;
}

// The scalar type of custom type I (a numpy generic), ready.
template <int I>
bool register_scalar_type() {
    custom& c = types[I];
    PyTypeObject& t = c.type;
    t.ob_base.ob_base.ob_refcnt = 1;
    t.tp_name = c.name;
    t.tp_basicsize = sizeof(scalar);
    t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE;
    t.tp_doc = c.doc;
    t.tp_new = scalar_new;
    t.tp_repr = scalar_repr;
    t.tp_str = scalar_repr;
    t.tp_hash = scalar_hash;
    t.tp_richcompare = scalar_compare;
    t.tp_as_number = &number_methods;
    t.tp_base = &PyGenericArrType_Type;
    if (PyType_Ready(&t) < 0) return false;
    return true;
}

// The array functions and the descriptor of type I, registered with numpy (c.typenum, c.descr).
template <int I>
bool register_descr() {
    custom& c = types[I];
    PyTypeObject& t = c.type;
    PyArray_ArrFuncs& f = c.funcs;
    PyArray_InitArrFuncs(&f);
    f.getitem = getitem<I>;
    f.setitem = setitem<I>;
    f.copyswapn = copyswapn<I>;
    f.copyswap = copyswap<I>;
    f.compare = compare<I>;
    f.argmax = argbest<I, true>;
    f.argmin = argbest<I, false>;
    f.nonzero = nonzero<I>;
    f.fill = fill<I>;
    f.fillwithscalar = fillwithscalar<I>;
    f.dotfunc = dot<I>;

    // Registration takes the descriptor over (numpy keeps it for the process).
    PyArray_Descr* d = PyObject_New(PyArray_Descr, &PyArrayDescr_Type);
    if (!d) return false;
    d->typeobj = &t;
    d->kind = 'V';
    d->type = c.type_char;
    d->byteorder = '=';
    d->flags = NPY_NEEDS_PYAPI | NPY_USE_GETITEM | NPY_USE_SETITEM;
    d->type_num = 0;
    d->elsize = c.size;
    d->alignment = c.size;
    d->subarray = nullptr;
    d->fields = nullptr;
    d->names = nullptr;
    d->f = &f;
    d->metadata = nullptr;
    d->c_metadata = nullptr;
    d->hash = -1;
    c.typenum = PyArray_RegisterDataType(d);
    if (c.typenum < 0) return false;
    c.descr = PyArray_DescrFromType(c.typenum);
    return true;
}

// Type I's casts: to float32 and float64 safely (exact), and the integers that fit exactly from;
// to and from float16.
template <int I>
bool register_type_casts() {
    custom& c = types[I];
    PyArray_Descr* d = c.descr;

    const bool wide = c.bf16;  // 8 significant bits: bool, int8 and uint8 are exact
    if (!register_casts<I, npy_bool>(NPY_BOOL, false, true) ||
        !register_casts<I, npy_byte>(NPY_BYTE, false, wide) ||
        !register_casts<I, npy_ubyte>(NPY_UBYTE, false, wide) ||
        !register_casts<I, npy_short>(NPY_SHORT, false, false) ||
        !register_casts<I, npy_ushort>(NPY_USHORT, false, false) ||
        !register_casts<I, npy_int>(NPY_INT, false, false) ||
        !register_casts<I, npy_uint>(NPY_UINT, false, false) ||
        !register_casts<I, npy_long>(NPY_LONG, false, false) ||
        !register_casts<I, npy_ulong>(NPY_ULONG, false, false) ||
        !register_casts<I, npy_longlong>(NPY_LONGLONG, false, false) ||
        !register_casts<I, npy_ulonglong>(NPY_ULONGLONG, false, false) ||
        !register_casts<I, npy_float>(NPY_FLOAT, true, false) ||
        !register_casts<I, npy_double>(NPY_DOUBLE, true, false) ||
        !register_casts<I, npy_longdouble>(NPY_LONGDOUBLE, true, false))
        return false;
    PyArray_Descr* half = PyArray_DescrFromType(NPY_HALF);
    if (PyArray_RegisterCastFunc(d, NPY_HALF, cast_to_half<I>) < 0 ||
        PyArray_RegisterCastFunc(half, c.typenum, cast_from_half<I>) < 0)
        return false;
    if (!c.bf16 && PyArray_RegisterCanCast(d, NPY_HALF, NPY_NOSCALAR) < 0) return false;
    return true;
}

// Type I's ufunc loops: arithmetic, the functions the frontend's values use, predicates and
// comparisons.
template <int I>
bool register_ufuncs(PyObject* numpy) {
    custom& c = types[I];
    const int n = c.typenum;
    const struct {
        const char* name;
        PyUFuncGenericFunction f;
        int nargs;
        bool boolean;
    } loops[] = {
        {"negative", unary_loop<I, u_negative>, 2, false},
        {"positive", unary_loop<I, u_positive>, 2, false},
        {"absolute", unary_loop<I, u_absolute>, 2, false},
        {"sqrt", unary_loop<I, u_sqrt>, 2, false},
        {"square", unary_loop<I, u_square>, 2, false},
        {"exp", unary_loop<I, u_exp>, 2, false},
        {"log", unary_loop<I, u_log>, 2, false},
        {"tanh", unary_loop<I, u_tanh>, 2, false},
        {"reciprocal", unary_loop<I, u_reciprocal>, 2, false},
        {"rint", unary_loop<I, u_rint>, 2, false},
        {"floor", unary_loop<I, u_floor>, 2, false},
        {"ceil", unary_loop<I, u_ceil>, 2, false},
        {"sign", unary_loop<I, u_sign>, 2, false},
        {"add", binary_loop<I, b_add>, 3, false},
        {"subtract", binary_loop<I, b_subtract>, 3, false},
        {"multiply", binary_loop<I, b_multiply>, 3, false},
        {"true_divide", binary_loop<I, b_true_divide>, 3, false},
        {"power", binary_loop<I, b_power>, 3, false},
        {"maximum", binary_loop<I, b_maximum>, 3, false},
        {"minimum", binary_loop<I, b_minimum>, 3, false},
        {"fmax", binary_loop<I, b_fmax>, 3, false},
        {"fmin", binary_loop<I, b_fmin>, 3, false},
        {"isnan", predicate_loop<I, t_isnan>, 2, true},
        {"isinf", predicate_loop<I, t_isinf>, 2, true},
        {"isfinite", predicate_loop<I, t_isfinite>, 2, true},
        {"equal", compare_loop<I, t_equal>, 3, true},
        {"not_equal", compare_loop<I, t_not_equal>, 3, true},
        {"less", compare_loop<I, t_less>, 3, true},
        {"less_equal", compare_loop<I, t_less_equal>, 3, true},
        {"greater", compare_loop<I, t_greater>, 3, true},
        {"greater_equal", compare_loop<I, t_greater_equal>, 3, true},
    };
    for (const auto& l : loops)
        if (!add_loop(numpy, l.name, n, l.f, l.nargs, l.boolean)) return false;
    return true;
}

template <int I>
bool register_type(PyObject* module, PyObject* numpy) {
    custom& c = types[I];
    if (!register_scalar_type<I>() || !register_descr<I>() || !register_type_casts<I>() ||
        !register_ufuncs<I>(numpy))
        return false;
    PyTypeObject& t = c.type;
    Py_INCREF(&t);
    return PyModule_AddObject(module, c.name, reinterpret_cast<PyObject*>(&t)) == 0;
}

template <int I, int J>
bool register_between() {
    if (I == J) return true;
    return PyArray_RegisterCastFunc(types[I].descr, types[J].typenum, cast_custom<I, J>) == 0;
}

// Type I's casts to every type.
template <int I, std::size_t... J>
bool register_from(std::index_sequence<J...>) {
    return (register_between<I, int(J)>() && ...);
}

// Every type, and the casts between each two.
template <std::size_t... I>
bool register_all(PyObject* m, PyObject* numpy, std::index_sequence<I...>) {
    return (register_type<int(I)>(m, numpy) && ...) &&
           (register_from<int(I)>(std::make_index_sequence<type_count>{}) && ...);
}

PyModuleDef module_def = {PyModuleDef_HEAD_INIT,
                          "_trnsim_dtypes",
                          "bfloat16, the 8-bit floats and float4_e2m1fn as numpy dtypes "
                          "(trnsim's NKI frontend)",
                          -1,
                          nullptr,
                          nullptr,
                          nullptr,
                          nullptr,
                          nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__trnsim_dtypes() {
    import_array();
    import_umath();
    number_methods.nb_add = nb_add;
    number_methods.nb_subtract = nb_sub;
    number_methods.nb_multiply = nb_mul;
    number_methods.nb_true_divide = nb_div;
    number_methods.nb_negative = nb_neg;
    number_methods.nb_positive = nb_pos;
    number_methods.nb_absolute = nb_abs;
    number_methods.nb_float = scalar_float;
    number_methods.nb_int = scalar_int;
    number_methods.nb_bool = scalar_bool;
    PyObject* m = PyModule_Create(&module_def);
    if (!m) return nullptr;
    PyObject* numpy = PyImport_ImportModule("numpy");
    if (!numpy) return nullptr;
    const bool ok = register_all(m, numpy, std::make_index_sequence<type_count>{});
    Py_DECREF(numpy);
    if (!ok) {
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
