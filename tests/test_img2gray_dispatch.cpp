// A C++ host linked against libtorch that loads an img2gray torch variant
// folder the way a kernels_get caller would (dlopen of its native module),
// then calls the registered op `<id>::img2gray` through the dispatcher and the
// plain C entry points through dlsym, and compares every result with a
// reference computed here independently (double arithmetic, the documented
// rounding). On a machine with a GPU the CUDA implementation is checked too,
// and must be bit-identical to the CPU one.
//
// usage: test_img2gray_dispatch <variant folder>
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <dlfcn.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "img2gray.h"

namespace {

int passed = 0, failed = 0;

void check(bool ok, const std::string &what) {
  if (ok) {
    passed++;
  } else {
    failed++;
    std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  }
}

// gray = round-half-up(0.21 R + 0.72 G + 0.07 B) with the weights in 1/256
// (54, 184, 18): written from the documentation, not from the kernel's code.
uint8_t reference_pixel(uint8_t r, uint8_t g, uint8_t b) {
  double y = (54.0 * r + 184.0 * g + 18.0 * b) / 256.0;
  return (uint8_t)std::floor(y + 0.5);
}

at::Tensor reference(const at::Tensor &rgb) {
  at::Tensor in = rgb.contiguous();
  std::vector<int64_t> shape(in.sizes().begin(), in.sizes().end() - 1);
  at::Tensor out = at::empty(shape, at::kByte);
  const uint8_t *p = in.data_ptr<uint8_t>();
  uint8_t *q = out.data_ptr<uint8_t>();
  for (int64_t i = 0; i < out.numel(); i++)
    q[i] = reference_pixel(p[3 * i], p[3 * i + 1], p[3 * i + 2]);
  return out;
}

at::Tensor random_image(std::mt19937_64 &rng, std::vector<int64_t> shape) {
  at::Tensor t = at::empty(shape, at::kByte);
  uint8_t *p = t.data_ptr<uint8_t>();
  for (int64_t i = 0; i < t.numel(); i++)
    p[i] = (uint8_t)(rng() >> 56);
  return t;
}

std::string read_id(const std::string &dir) {
  std::ifstream f(dir + "/metadata.json");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  size_t k = s.find("\"id\"");
  if (k == std::string::npos)
    return "";
  size_t a = s.find('"', s.find(':', k) + 1);
  size_t b = s.find('"', a + 1);
  return s.substr(a + 1, b - a - 1);
}

std::string shape_str(const std::vector<int64_t> &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); i++)
    r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// Expects fn to throw a c10::Error whose message contains `needle`.
void expect_error(const std::function<void()> &fn, const char *needle, const std::string &what) {
  try {
    fn();
    check(false, what + ": no error raised");
  } catch (const c10::Error &e) {
    bool ok = std::strstr(e.what_without_backtrace(), needle) != nullptr;
    check(ok, what + ": message '" + e.what_without_backtrace() + "' lacks '" + needle + "'");
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s VARIANT_DIR\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  std::string id = read_id(dir);
  if (id.empty()) {
    std::fprintf(stderr, "no id in %s/metadata.json\n", dir.c_str());
    return 1;
  }
  std::string so = dir + "/" + id + ".abi3.so";
  void *h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "dlopen %s: %s\n", so.c_str(), dlerror());
    return 1;
  }
  auto c_cpu = (int (*)(const uint8_t *, uint8_t *, int64_t, int64_t, int64_t))dlsym(h, "img2gray_cpu");
  auto c_cuda = (int (*)(const uint8_t *, uint8_t *, int64_t, int64_t, int64_t, void *))dlsym(h, "img2gray_cuda");
  auto c_has_cuda = (int (*)(void))dlsym(h, "img2gray_has_cuda");
  check(c_cpu && c_cuda && c_has_cuda, "C entry points exported by " + so);
  if (!c_cpu || !c_cuda || !c_has_cuda)
    return 1;

  auto op = c10::Dispatcher::singleton()
                .findSchemaOrThrow((id + "::img2gray").c_str(), "")
                .typed<void(const at::Tensor &, at::Tensor &)>();

  uint64_t seed = std::random_device{}();
  std::printf("variant %s, id %s, seed %" PRIu64 "\n", dir.c_str(), id.c_str(), seed);
  std::mt19937_64 rng(seed);

  bool cuda = c_has_cuda() && at::hasCUDA();
  std::printf("CUDA implementation in module: %d, CUDA device usable: %d\n", c_has_cuda(), (int)at::hasCUDA());

  std::vector<std::vector<int64_t>> shapes = {
      {1, 1, 3},       {1, 15, 3},      {7, 13, 3},       {17, 31, 3},    {33, 65, 3},     {5, 1, 3},
      {3, 1, 1, 3},    {2, 7, 9, 3},    {4, 33, 17, 3},   {1, 31, 47, 3}, {481, 641, 3},   {3, 121, 257, 3},
      {2, 1080, 1919, 3}};
  // a few random odd shapes on top
  for (int i = 0; i < 6; i++) {
    int64_t b = 1 + (int64_t)(rng() % 4), hh = 1 + 2 * (int64_t)(rng() % 150), ww = 1 + 2 * (int64_t)(rng() % 300);
    shapes.push_back({b, hh, ww, 3});
  }

  for (auto &shape : shapes) {
    at::Tensor in = random_image(rng, shape);
    at::Tensor ref = reference(in);
    std::vector<int64_t> oshape(shape.begin(), shape.end() - 1);
    std::string s = shape_str(shape);

    at::Tensor out = at::full(oshape, 0x5a, at::kByte); // poisoned
    op.call(in, out);
    check(at::equal(out, ref), "dispatcher CPU " + s + " matches the reference");

    at::Tensor out_c = at::full(oshape, 0xa5, at::kByte);
    int64_t b = shape.size() == 4 ? shape[0] : 1;
    int rc = c_cpu(in.data_ptr<uint8_t>(), out_c.data_ptr<uint8_t>(), b, shape[shape.size() - 3], shape[shape.size() - 2]);
    check(rc == IMG2GRAY_OK && at::equal(out_c, ref), "C entry img2gray_cpu " + s + " matches the reference");

    if (cuda) {
      at::Tensor din = in.to(at::kCUDA);
      at::Tensor dout = at::full(oshape, 0x5a, at::TensorOptions().dtype(at::kByte).device(at::kCUDA));
      op.call(din, dout);
      check(at::equal(dout.cpu(), out), "dispatcher CUDA " + s + " bit-identical to CPU");

      at::Tensor dout2 = at::full(oshape, 0xa5, at::TensorOptions().dtype(at::kByte).device(at::kCUDA));
      rc = c_cuda(din.data_ptr<uint8_t>(), dout2.data_ptr<uint8_t>(), b, shape[shape.size() - 3],
                  shape[shape.size() - 2], nullptr);
      check(rc == IMG2GRAY_OK && at::equal(dout2.cpu(), ref), "C entry img2gray_cuda " + s + " matches the reference");

      if (shape.size() == 4 && shape[0] > 1) {
        // a contiguous view with a storage offset: unaligned buffers
        at::Tensor vin = din[1], vout = dout[1];
        vout.fill_(0x5a);
        op.call(vin, vout);
        check(at::equal(vout.cpu(), ref[1]), "dispatcher CUDA unaligned view " + s);
      }
    }
  }

  // the boxed path (the one Python's torch.ops takes), results and errors
  {
    const auto &handle = c10::Dispatcher::singleton().findSchemaOrThrow((id + "::img2gray").c_str(), "");
    at::Tensor in = random_image(rng, {3, 17, 29, 3});
    at::Tensor out = at::full({3, 17, 29}, 0x5a, at::kByte);
    torch::jit::Stack stack{c10::IValue(in), c10::IValue(out)};
    handle.callBoxed(&stack);
    check(at::equal(out, reference(in)), "boxed call matches the reference");
    expect_error(
        [&] {
          torch::jit::Stack bad{c10::IValue(in.to(at::kFloat)), c10::IValue(out)};
          handle.callBoxed(&bad);
        },
        "must be uint8", "boxed call with a float input");
  }

  // zero-size images are valid and do nothing
  {
    at::Tensor in = at::empty({0, 5, 3}, at::kByte), out = at::empty({0, 5}, at::kByte);
    op.call(in, out);
    check(true, "zero-size image accepted");
    check(c_cpu(nullptr, nullptr, 1, 0, 7) == IMG2GRAY_OK, "C entry: empty image is OK");
    check(c_cpu(nullptr, nullptr, 1, 2, 2) == IMG2GRAY_EINVAL, "C entry: NULL buffers are EINVAL");
    check(c_cpu(in.data_ptr<uint8_t>(), out.data_ptr<uint8_t>(), -1, 2, 2) == IMG2GRAY_EINVAL, "C entry: negative size is EINVAL");
    check(c_cpu(in.data_ptr<uint8_t>(), out.data_ptr<uint8_t>(), INT64_MAX, 2, 2) == IMG2GRAY_EINVAL, "C entry: overflowing size is EINVAL");
  }

  // argument checks with clear messages
  at::Tensor good = random_image(rng, {4, 6, 3});
  at::Tensor gout = at::empty({4, 6}, at::kByte);
  expect_error([&] { op.call(good.to(at::kFloat), gout); }, "must be uint8", "float input");
  expect_error([&] { at::Tensor o = at::empty({4, 6}, at::kInt); op.call(good, o); }, "output must be uint8", "int output");
  expect_error([&] { at::Tensor i = random_image(rng, {4, 6, 4}); op.call(i, gout); }, "[H, W, 3] or [B, H, W, 3]", "4 channels");
  expect_error([&] { at::Tensor i = random_image(rng, {12, 3}); at::Tensor o = at::empty({12}, at::kByte); op.call(i, o); },
               "[H, W, 3] or [B, H, W, 3]", "2-d input");
  expect_error([&] { at::Tensor o = at::empty({6, 4}, at::kByte); op.call(good, o); }, "output must have shape", "output shape");
  expect_error([&] { at::Tensor o = at::empty({1, 4, 6}, at::kByte); op.call(good, o); }, "output must have shape", "output rank");
  expect_error([&] { at::Tensor i = random_image(rng, {6, 4, 3}).transpose(0, 1); op.call(i, gout); }, "must be contiguous",
               "non-contiguous input");
  expect_error([&] { at::Tensor o = at::empty({6, 4}, at::kByte).t(); op.call(good, o); }, "output must be contiguous",
               "non-contiguous output");
  if (cuda)
    expect_error([&] { at::Tensor o = at::empty({4, 6}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA)); op.call(good, o); },
                 "must both be on", "mixed devices");

  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
