/*
 * libkernels for C++ hosts with libtorch: a kernel handle that closes
 * itself, and the ops a torch variant registered, found through torch's
 * dispatcher under the variant's namespace (its metadata.json id).
 *
 * Header-only; include it in a program that links libtorch and libkernels
 * (CMake: target_link_libraries(app kernels::kernels ${TORCH_LIBRARIES})).
 * No Python is needed: libkernels loads kernel-builder's Python extension
 * modules into a process without libpython.
 *
 *   kernels::kernel k = kernels::kernel::get("kernels-community/img2gray", ">=1.1.2,<2");
 *   auto img2gray = k.op<void(const at::Tensor &, at::Tensor &)>("img2gray");
 *   img2gray.call(rgb, gray);            // dispatched by the tensors' device
 *   for (const std::string &s : k.schemas()) std::cout << s << "\n";
 *
 * Errors are thrown as kernels::error, carrying the KERNELS_E* code and the
 * library's message (what failed and what to do).
 */
#ifndef KERNELS_TORCH_HPP
#define KERNELS_TORCH_HPP

#include <kernels.h>

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kernels {

/** A failed libkernels call: code() is the KERNELS_E* code, what() its message. */
class error : public std::runtime_error {
public:
	error(int code, const std::string &message) : std::runtime_error(message), code_(code) {}
	int code() const noexcept { return code_; }

	/** Throws the calling thread's last libkernels error. */
	[[noreturn]] static void raise(int code)
	{
		const char *m = kernels_error_last();
		throw error(code, std::string(kernels_strerror(code)) + ": " + (m && *m ? m : "no message"));
	}

private:
	int code_;
};

/**
 * A loaded kernel, owning one reference (kernels_kernel_close on
 * destruction). Move-only. The native module itself stays mapped for the
 * life of the process (ops registered with torch are never unregistered).
 */
class kernel {
public:
	/** Takes over `k` (may be NULL: an empty handle). */
	explicit kernel(kernels_kernel *k = nullptr) noexcept : k_(k) {}
	kernel(kernel &&o) noexcept : k_(std::exchange(o.k_, nullptr)) {}
	kernel &operator=(kernel &&o) noexcept
	{
		if (this != &o) {
			kernels_kernel_close(k_);
			k_ = std::exchange(o.k_, nullptr);
		}
		return *this;
	}
	kernel(const kernel &) = delete;
	kernel &operator=(const kernel &) = delete;
	~kernel() { kernels_kernel_close(k_); }

	/** kernels_get(): resolve, select, download, verify and load. Throws kernels::error. */
	static kernel get(const std::string &repo, const std::string &revision, const kernels_options *opts = nullptr)
	{
		kernels_kernel *k = nullptr;
		int rc = kernels_get(&k, repo.c_str(), revision.c_str(), opts);
		if (rc < 0)
			error::raise(rc);
		return kernel(k);
	}

	/** kernels_load_local(): a variant folder or a build tree. Throws kernels::error. */
	static kernel load_local(const std::string &path, const kernels_options *opts = nullptr)
	{
		kernels_kernel *k = nullptr;
		int rc = kernels_load_local(&k, path.c_str(), opts);
		if (rc < 0)
			error::raise(rc);
		return kernel(k);
	}

	kernels_kernel *handle() const noexcept { return k_; }
	explicit operator bool() const noexcept { return k_ != nullptr; }
	/** The ops namespace: the variant's metadata.json id. */
	std::string ns() const { return kernels_metadata_id(kernels_kernel_metadata(checked())); }
	std::string variant() const { return kernels_kernel_variant(checked()); }

	/** The op `name` (e.g. "img2gray") of this variant; throws kernels::error
	 *  (KERNELS_ENOTFOUND) naming the ops it has when there is none. */
	c10::OperatorHandle op(const std::string &name, const std::string &overload = "") const
	{
		auto h = c10::Dispatcher::singleton().findSchema({ns() + "::" + name, overload});
		if (!h) {
			std::string have;
			for (const std::string &s : schemas())
				have += "\n  " + s;
			throw error(KERNELS_ENOTFOUND, "variant '" + variant() + "' registered no op '" + ns() + "::" +
				    name + (overload.empty() ? "" : "." + overload) + "'; it has:" +
				    (have.empty() ? std::string(" none (is it a torch variant?)") : have));
		}
		return *h;
	}

	/** The op with its C++ signature, e.g. op<void(const at::Tensor &, at::Tensor &)>("img2gray");
	 *  torch checks the signature against the schema and throws c10::Error on a mismatch. */
	template <class Signature>
	c10::TypedOperatorHandle<Signature> op(const std::string &name, const std::string &overload = "") const
	{
		return op(name, overload).typed<Signature>();
	}

	/** The schemas this variant registered, as torch prints them, sorted. */
	std::vector<std::string> schemas() const
	{
		const std::string prefix = ns() + "::";
		std::vector<std::string> out;
		for (const c10::OperatorName &n : c10::Dispatcher::singleton().getAllOpNames()) {
			if (n.name.compare(0, prefix.size(), prefix) != 0)
				continue;
			auto h = c10::Dispatcher::singleton().findSchema(n);
			std::ostringstream s;
			if (h)
				s << h->schema();
			else
				s << n;
			out.push_back(s.str());
		}
		std::sort(out.begin(), out.end());
		return out;
	}

private:
	kernels_kernel *checked() const
	{
		if (!k_)
			throw error(KERNELS_EINVAL, "empty kernels::kernel handle");
		return k_;
	}
	kernels_kernel *k_;
};

} // namespace kernels

#endif
