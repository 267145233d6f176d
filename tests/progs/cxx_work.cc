// cxx_work.cc: a C++ workload for the end-to-end tests of demangled names. Usage: cxx_work SECONDS
// Time is spent in a member function template of a class template inside a namespace
// (shapes::Integrator<double>::advance(long)) and in a function template of a nested namespace
// (shapes::detail::accumulate<float>(float const*, unsigned long)), about 60/40.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace shapes {
namespace detail {
template <typename T> __attribute__((noinline)) T accumulate(const T *v, std::size_t n)
{
	T sum = 0;
	for (std::size_t i = 0; i < n; i++) {
		sum = sum * T(0.999) + v[i];
		__asm__ volatile("" : "+x"(sum));
	}
	return sum;
}
} // namespace detail

template <typename T> class Integrator {
public:
	explicit Integrator(T dt) : dt_(dt) {}
	__attribute__((noinline)) T advance(long steps)
	{
		for (long i = 0; i < steps; i++) {
			velocity_ += dt_ * (T(1) - position_);
			position_ += dt_ * velocity_;
			__asm__ volatile("" : "+x"(position_), "+x"(velocity_));
		}
		return position_;
	}

private:
	T dt_, position_ = 0, velocity_ = 0;
};
} // namespace shapes

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
	if (seconds <= 0 || seconds > 3600) {
		std::fprintf(stderr, "usage: cxx_work SECONDS (0 < SECONDS <= 3600)\n");
		return 2;
	}
	auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
	shapes::Integrator<double> integ(1e-6);
	std::vector<float> data(100000, 0.5f);
	double out = 0;
	while (std::chrono::steady_clock::now() < until) {
		out += integ.advance(300000);
		out += shapes::detail::accumulate<float>(data.data(), data.size());
	}
	std::printf("cxx_work: %g\n", out);
	return 0;
}
