// Geometry primitives.
#include <cmath>
#include <memory>
#include <vector>
#include "shape_base.h"

namespace geo {

constexpr double kPi = 3.14159;

/// Abstract base of every shape.
class Shape : public Drawable {
 public:
  explicit Shape(std::string name);
  virtual ~Shape() = default;
  /// Area in square units.
  virtual double area() const = 0;
  static int count;

 protected:
  std::string name_;
};

struct Point {
  double x, y;
};

class Circle final : public Shape, private Noncopyable {
 public:
  Circle(Point centre, double r) : Shape("circle"), centre_(centre), r_(r) {}
  double area() const override { return kPi * r_ * r_; }
  [[deprecated("use area")]] double size() const { return area(); }

 private:
  Point centre_;
  double r_;
};

Shape::Shape(std::string name) : name_(std::move(name)) { ++count; }

int Shape::count = 0;

template <typename T>
T clamp(T v, T lo, T hi) {
  return std::max(lo, std::min(v, hi));
}

/** Sum of the areas of `shapes`. */
double total_area(const std::vector<std::unique_ptr<Shape>>& shapes) {
  double sum = 0;
  for (const auto& s : shapes) sum += s->area();
  return sum;
}

using ShapeList = std::vector<std::unique_ptr<Shape>>;

enum class Colour { Red, Green, Blue };

struct Circle::Cache {
  double area;
};

const std::string& label(const Shape& s) { return s.name(); }

Circle& Circle::operator=(const Circle& other) {
  r_ = other.r_;
  return *this;
}

}  // namespace geo

GEO_BEGIN_NAMESPACE
class GEO_EXPORT Canvas : public Shape {
  Q_OBJECT
 public:
  Canvas();
  void draw() { paint(); }
};
GEO_END_NAMESPACE
