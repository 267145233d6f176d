// symbols_cxx.cc: the C++ program profiler/unwind/symbols_test.c symbolizes: a templated member
// function in a namespace, whose MARK(1) the test expects as a demangled name.
#include <cstdio>

#include "marks.h"

namespace geo {
template <typename T> struct Accumulator {
	T total;
	__attribute__((noinline)) T add(T v)
	{
		MARK(1);
		total += v;
		return total;
	}
};
} // namespace geo

int main(int argc, char **)
{
	geo::Accumulator<double> acc{ 0 };
	std::printf("%g\n", acc.add(argc));
	return 0;
}
