// The extension's Python module: one function, the op itself, called with CPython's vectorcall
// convention (METH_FASTCALL). It stands in for a pybind11 module, whose generic dispatcher costs a
// few hundred nanoseconds a call (two vectors allocated, every overload tried) in a budget of ten
// microseconds: the arguments here are converted by the op's own parameter types, at compile
// time. Written by autokernel export.
#pragma once
#include <ATen/ATen.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <tuple>
#include <type_traits>
#include <optional>
#include <utility>

namespace autokernel_ops::direct {

/// One Python argument as the op's parameter: false (with no Python error set) when it is not one.
inline bool take(PyObject* o, at::Tensor& out) {
  if (!THPVariable_Check(o)) return false;
  out = THPVariable_Unpack(o);
  return true;
}
inline bool take(PyObject* o, std::optional<at::Tensor>& out) {  // Tensor? : None or a tensor
  if (o == Py_None) return out.reset(), true;
  if (!THPVariable_Check(o)) return false;
  out = THPVariable_Unpack(o);
  return true;
}
inline bool take(PyObject* o, double& out) {
  out = PyFloat_AsDouble(o);  // a float, an int, anything with __float__
  if (out == -1.0 && PyErr_Occurred()) return PyErr_Clear(), false;
  return true;
}
inline bool take(PyObject* o, bool& out) {  // True or False, nothing else
  if (o != Py_True && o != Py_False) return false;
  out = o == Py_True;
  return true;
}
inline bool take(PyObject* o, int64_t& out) {
  out = PyLong_AsLongLong(o);
  if (out == -1 && PyErr_Occurred()) return PyErr_Clear(), false;
  return true;
}

/// The op's result as a new Python reference, or nullptr with the error set.
inline PyObject* give(const at::Tensor& t) { return THPVariable_Wrap(t); }
inline PyObject* give(const std::tuple<at::Tensor, at::Tensor>& t) {
  PyObject* first = give(std::get<0>(t));
  if (!first) return nullptr;
  PyObject* second = give(std::get<1>(t));
  if (!second) return Py_DECREF(first), nullptr;
  PyObject* pair = PyTuple_New(2);
  if (!pair) return Py_DECREF(first), Py_DECREF(second), nullptr;
  PyTuple_SET_ITEM(pair, 0, first);
  PyTuple_SET_ITEM(pair, 1, second);
  return pair;
}

template <typename F, F fn>
struct Function;

/// fn(A...) as a METH_FASTCALL function: positional arguments only, each converted as A says; an
/// error of the op (TORCH_CHECK's c10::Error, a launch that failed) becomes a RuntimeError with its
/// message, as pybind11 would raise it.
template <typename R, typename... A, R (*fn)(A...)>
struct Function<R (*)(A...), fn> {
  static PyObject* call(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != Py_ssize_t(sizeof...(A))) {
      PyErr_Format(PyExc_TypeError, "autokernel_ops: the op takes %d positional arguments, %zd were given",
                   int(sizeof...(A)), nargs);
      return nullptr;
    }
    try {
      return call_with(args, std::index_sequence_for<A...>{});
    } catch (const c10::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
    return nullptr;
  }

 private:
  template <std::size_t... I>
  static PyObject* call_with(PyObject* const* args, std::index_sequence<I...>) {
    std::tuple<std::decay_t<A>...> values;
    int wrong = -1;
    ((wrong < 0 && !take(args[I], std::get<I>(values)) ? wrong = int(I) : 0), ...);
    if (wrong >= 0) {
      PyErr_Format(PyExc_TypeError, "autokernel_ops: argument %d of the op is a %s, not what the op takes (a tensor or a number)",
                   wrong + 1, Py_TYPE(args[wrong])->tp_name);
      return nullptr;
    }
    return give(fn(std::get<I>(values)...));
  }
};

}  // namespace autokernel_ops::direct

#define AK_DIRECT_CONCAT_EXPAND(a, b) a##b
#define AK_DIRECT_CONCAT(a, b) AK_DIRECT_CONCAT_EXPAND(a, b)
#define AK_DIRECT_STR_EXPAND(x) #x
#define AK_DIRECT_STR(x) AK_DIRECT_STR_EXPAND(x)

/// The extension's module (named TORCH_EXTENSION_NAME, as torch.utils.cpp_extension builds it)
/// with `type` as its one function.
#define AK_DIRECT_MODULE(type, fn) AK_DIRECT_MODULE_NAMED(type, fn, TORCH_EXTENSION_NAME)

/// The same module under `name`: several ops' modules in one library (the hf-kernels build), each
/// found by its own PyInit_<name>.
#define AK_DIRECT_MODULE_NAMED(type, fn, name)                                                            \
  static PyMethodDef ak_direct_methods[] = {                                                            \
      {#type, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(                           \
                  &autokernel_ops::direct::Function<decltype(fn), fn>::call)),                          \
       METH_FASTCALL, "autokernel::" #type " without the dispatcher"},                                  \
      {nullptr, nullptr, 0, nullptr}};                                                                  \
  static PyModuleDef ak_direct_module = {PyModuleDef_HEAD_INIT, AK_DIRECT_STR(name), "autokernel::" #type, \
                                         -1, ak_direct_methods};                                        \
  PyMODINIT_FUNC AK_DIRECT_CONCAT(PyInit_, name)(void) { return PyModule_Create(&ak_direct_module); }
