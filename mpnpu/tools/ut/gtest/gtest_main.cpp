// The main of a unit-test program built by mpnpu ut: GoogleTest flags, then every registered test.
#include "gtest/gtest.h"

int main(int argc, char** argv) {
    testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
