/* img2gray from a C++ host with libtorch and no Python: fetch the
 * kernel-builder-built torch variant with libkernels, find its op through
 * torch's dispatcher (include/kernels/torch.hpp) and convert a PNG on the
 * CPU, or on a CUDA device where the variant and the machine have one.
 *
 *   kernels_img2gray_torch [--repo ORG/NAME] [--revision SPEC] [--device cpu|cuda]
 *                          input.png output.png
 *
 * Link: kernels::kernels and libtorch (see examples/CMakeLists.txt). */
#include <kernels/torch.hpp>

#include <ATen/ATen.h>
#include <ATen/Context.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <string>

#include "png_io.h"

static bool cuda_usable()
{
	return at::hasCUDA() && at::detail::getCUDAHooks().deviceCount() > 0;
}

int main(int argc, char **argv)
{
	std::string repo = "kernels-community/img2gray", revision = ">=1.1.2,<2", device = "auto";
	const char *in = nullptr, *out = nullptr;

	for (int i = 1; i < argc; i++) {
		if (!std::strcmp(argv[i], "--repo") && i + 1 < argc)
			repo = argv[++i];
		else if (!std::strcmp(argv[i], "--revision") && i + 1 < argc)
			revision = argv[++i];
		else if (!std::strcmp(argv[i], "--device") && i + 1 < argc)
			device = argv[++i];
		else if (!in)
			in = argv[i];
		else if (!out)
			out = argv[i];
	}
	if (!in || !out || (device != "auto" && device != "cpu" && device != "cuda")) {
		std::cerr << "usage: " << argv[0] << " [--repo ORG/NAME] [--revision SPEC] [--device cpu|cuda] "
			  << "input.png output.png\n";
		return 2;
	}

	try {
		kernels_options opts;
		kernels_system sys{};
		kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
		if (device == "cpu") {
			sys.backend = "cpu";
			opts.system = &sys;
		}
		kernels::kernel k = kernels::kernel::get(repo, revision, &opts);
		std::cout << "variant   " << k.variant() << "\n";
		for (const std::string &s : k.schemas())
			std::cout << "op        " << s << "\n";
		auto img2gray = k.op<void(const at::Tensor &, at::Tensor &)>("img2gray");

		uint32_t w = 0, h = 0;
		uint8_t *pixels = example_read_rgb(in, &w, &h);
		if (!pixels)
			return 1;
		at::Tensor rgb = at::from_blob(pixels, {h, w, 3}, at::kByte).clone();
		free(pixels);

		bool gpu = device == "cuda" || (device == "auto" && k.variant().find("-cu") != std::string::npos &&
						  cuda_usable());
		if (gpu && !cuda_usable()) {
			std::cerr << "img2gray: --device cuda, but torch sees no CUDA device\n";
			return 1;
		}
		at::Device dev = gpu ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
		at::Tensor input = rgb.to(dev), gray = at::empty({h, w}, at::TensorOptions(at::kByte).device(dev));

		auto t0 = std::chrono::steady_clock::now();
		img2gray.call(input, gray);
		gray = gray.cpu(); /* waits for the device */
		double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
		std::cout << "convert   " << w << "x" << h << " on " << dev << " in " << ms << " ms\n";
		if (example_write_gray(out, w, h, gray.data_ptr<uint8_t>()) < 0)
			return 1;
		std::cout << "wrote     " << out << "\n";
	} catch (const kernels::error &e) {
		std::cerr << "img2gray: " << e.what() << "\n";
		return 1;
	} catch (const c10::Error &e) {
		std::cerr << "img2gray: " << e.what_without_backtrace() << "\n";
		return 1;
	}
	return 0;
}
