/**
 * Vocabulary of the synthetic retail worlds: product types with their option axes and price ranges, and the names and
 * places users are drawn from. Written for this generator; shapes follow the τ² retail DB (tau2.md §2).
 */

export interface ProductTemplate {
  name: string;
  /** Option axes in display order; each value list has at least two entries. */
  options: Record<string, readonly string[]>;
  price: readonly [number, number];
}

const COLORS = ['black', 'white', 'red', 'blue', 'green', 'silver', 'gray'] as const;

export const PRODUCT_TEMPLATES: readonly ProductTemplate[] = [
  { name: 'T-Shirt', options: { color: COLORS, size: ['S', 'M', 'L', 'XL'], material: ['cotton', 'polyester'] }, price: [40, 70] },
  { name: 'Mechanical Keyboard', options: { switch_type: ['linear', 'tactile', 'clicky'], backlight: ['none', 'white', 'RGB'], size: ['full size', '80%', '60%'] }, price: [120, 300] },
  { name: 'Tea Kettle', options: { material: ['glass', 'stainless steel', 'ceramic'], capacity: ['1 liter', '1.5 liters', '2 liters'], stovetop_compatibility: ['gas', 'induction', 'electric'] }, price: [30, 150] },
  { name: 'Desk Lamp', options: { color: ['black', 'white', 'silver'], brightness: ['low', 'medium', 'high'], power_source: ['battery', 'USB', 'AC adapter'] }, price: [80, 260] },
  { name: 'Water Bottle', options: { capacity: ['500ml', '750ml', '1000ml'], material: ['plastic', 'glass', 'stainless steel'], color: ['blue', 'black', 'red', 'green'] }, price: [15, 60] },
  { name: 'Running Shoes', options: { size: ['7', '8', '9', '10', '11'], color: ['black', 'white', 'red', 'yellow'], material: ['mesh', 'leather', 'synthetic'] }, price: [80, 200] },
  { name: 'Laptop', options: { screen_size: ['13-inch', '15-inch', '17-inch'], processor: ['i5', 'i7', 'i9'], ram: ['8GB', '16GB', '32GB'], storage: ['256GB SSD', '512GB SSD', '1TB SSD'] }, price: [1800, 3200] },
  { name: 'Smart Watch', options: { color: ['black', 'silver', 'gold'], band: ['leather', 'metal', 'silicone'], display: ['LCD', 'AMOLED'] }, price: [190, 380] },
  { name: 'Bluetooth Speaker', options: { color: ['black', 'blue', 'red', 'green'], battery_life: ['8 hours', '10 hours', '20 hours'], water_resistance: ['yes', 'no'] }, price: [50, 320] },
  { name: 'Backpack', options: { color: ['black', 'grey', 'navy', 'green'], size: ['small', 'medium', 'large'], material: ['nylon', 'polyester', 'leather'] }, price: [170, 240] },
  { name: 'Office Chair', options: { material: ['mesh', 'leather', 'fabric'], color: ['black', 'gray', 'blue', 'red'], armrest: ['fixed', 'adjustable', 'none'] }, price: [430, 550] },
  { name: 'Coffee Maker', options: { color: ['black', 'stainless steel', 'white'], capacity: ['1 cup', '4 cups', '8 cups', '12 cups'], type: ['drip', 'espresso', 'french press'] }, price: [90, 310] },
  { name: 'Wireless Earbuds', options: { color: ['black', 'white', 'blue'], battery_life: ['4 hours', '6 hours', '8 hours'], water_resistance: ['IPX4', 'IPX7', 'not resistant'] }, price: [60, 260] },
  { name: 'Hiking Boots', options: { size: ['7', '8', '9', '10', '11', '12'], material: ['leather', 'synthetic'], waterproof: ['yes', 'no'] }, price: [200, 270] },
  { name: 'Yoga Mat', options: { thickness: ['4mm', '5mm', '6mm'], material: ['PVC', 'natural rubber', 'TPE'], color: ['blue', 'green', 'pink', 'purple'] }, price: [80, 120] },
  { name: 'Electric Kettle', options: { capacity: ['1L', '1.5L', '2L'], material: ['plastic', 'glass', 'stainless steel'], color: ['black', 'white', 'silver'] }, price: [140, 300] },
  { name: 'Tablet', options: { screen_size: ['7-inch', '8-inch', '10-inch'], storage: ['32GB', '64GB', '128GB'], color: ['black', 'silver', 'gold'] }, price: [240, 3100] },
  { name: 'Headphones', options: { type: ['on-ear', 'over-ear', 'in-ear'], connectivity: ['wired', 'wireless'], color: ['black', 'white', 'red', 'blue'] }, price: [120, 380] },
  { name: 'Digital Camera', options: { resolution: ['20MP', '24MP', '30MP'], zoom: ['3x', '5x', '10x'], storage: ['SD card', 'CF card'] }, price: [1750, 3000] },
  { name: 'Sunglasses', options: { frame_color: ['black', 'brown', 'silver', 'gold'], lens_color: ['green', 'brown', 'blue', 'black'], lens_type: ['polarized', 'non-polarized'] }, price: [100, 300] },
  { name: 'Jigsaw Puzzle', options: { pieces: ['500', '1000', '1500', '2000'], theme: ['animals', 'landscape', 'art', 'fantasy'], difficulty_level: ['beginner', 'intermediate', 'expert'] }, price: [40, 90] },
  { name: 'Gaming Mouse', options: { color: ['black', 'white', 'RGB'], sensor_type: ['optical', 'laser'], connectivity: ['wired', 'wireless'] }, price: [130, 210] },
  { name: 'Air Purifier', options: { room_size: ['small', 'medium', 'large'], filter_type: ['HEPA', 'carbon', 'ionic'], features: ['quiet operation', 'night mode', 'smart sensors'] }, price: [400, 560] },
  { name: 'Vacuum Cleaner', options: { type: ['robotic', 'upright', 'canister'], bagged_bagless: ['bagged', 'bagless'], features: ['pet hair removal', 'HEPA filter', 'cordless'] }, price: [480, 660] },
  { name: 'Garden Hose', options: { length: ['25ft', '50ft', '100ft'], material: ['rubber', 'vinyl', 'latex'], color: ['green', 'blue', 'black'] }, price: [90, 160] },
  { name: 'Wristwatch', options: { strap_material: ['leather', 'metal', 'silicone'], dial_color: ['black', 'white', 'blue'] }, price: [1800, 2300] },
  { name: 'Bicycle', options: { frame_size: ['small', 'medium', 'large'], color: ['black', 'red', 'blue', 'green'], type: ['road', 'mountain', 'hybrid'] }, price: [1900, 3200] },
  { name: 'Indoor Security Camera', options: { resolution: ['1080p', '2K', '4K'], field_of_view: ['110 degrees', '130 degrees', '160 degrees'], connectivity: ['Wi-Fi', 'Ethernet'] }, price: [2700, 3200] },
  { name: 'Portable Charger', options: { capacity: ['5000mAh', '10000mAh', '20000mAh'], output: ['USB-A', 'USB-C', 'Wireless'], color: ['black', 'white', 'blue'] }, price: [30, 120] },
  { name: 'Perfume', options: { scent_family: ['woody', 'fresh', 'oriental'], size: ['30ml', '50ml', '100ml'], gender: ['men', 'women', 'unisex'] }, price: [240, 320] },
  { name: 'Notebook', options: { size: ['A4', 'A5'], cover_type: ['hard cover', 'soft cover'], paper_type: ['lined', 'grid', 'plain'] }, price: [20, 60] },
  { name: 'Skateboard', options: { deck_material: ['maple', 'bamboo', 'plastic'], length: ['28 inch', '31 inch', '34 inch'], design: ['plain', 'graphic', 'custom'] }, price: [110, 220] },
  { name: 'Grill', options: { type: ['gas', 'charcoal', 'electric'], size: ['portable', 'medium', 'large'], features: ['rotisserie', 'side burner', 'none'] }, price: [880, 1060] },
  { name: 'Cycling Helmet', options: { size: ['S', 'M', 'L'], color: ['black', 'white', 'red', 'blue'], ventilation: ['low', 'medium', 'high'] }, price: [150, 230] },
  { name: 'Luggage Set', options: { piece_count: ['2-piece', '3-piece', '4-piece'], color: ['black', 'red', 'blue', 'silver'], material: ['softshell', 'hardshell'] }, price: [440, 660] },
  { name: 'Smartphone', options: { color: ['black', 'gold', 'rose gold', 'silver'], storage: ['64GB', '128GB', '256GB'], RAM: ['4GB', '6GB', '8GB'], screen_size: ['5.8-inch', '6.1-inch', '6.5-inch'] }, price: [1000, 1300] },
  { name: 'Electric Toothbrush', options: { color: ['white', 'black', 'blue'], speed_settings: ['low', 'high'], battery_type: ['rechargeable', 'AA batteries'] }, price: [150, 270] },
  { name: 'Makeup Kit', options: { skin_tone: ['light', 'medium', 'dark'], kit_size: ['basic', 'professional'], brand: ['Brand A', 'Brand B', 'Brand C'] }, price: [220, 280] },
  { name: 'Action Camera', options: { resolution: ['1080p', '4K', '5K'], waterproof: ['yes', 'no'], color: ['black', 'silver'] }, price: [380, 560] },
  { name: 'Fleece Jacket', options: { size: ['XS', 'S', 'M', 'L', 'XL'], color: ['black', 'navy', 'red'], zipper: ['full', 'half'] }, price: [130, 180] },
  { name: 'Dumbbell Set', options: { weight_range: ['5-25 lbs', '30-50 lbs', '55-75 lbs'], material: ['iron', 'rubber', 'urethane'], set_type: ['adjustable', 'fixed'] }, price: [420, 560] },
  { name: 'Pet Bed', options: { size: ['small', 'medium', 'large'], material: ['memory foam', 'polyester', 'fleece'], color: ['beige', 'brown', 'grey'] }, price: [160, 210] },
  { name: 'Espresso Machine', options: { pressure: ['9 bar', '15 bar', '19 bar'], capacity: ['1L', '1.5L', '2L'], type: ['manual', 'automatic', 'capsule'] }, price: [1950, 3110] },
  { name: 'Bookshelf', options: { material: ['wood', 'metal', 'glass'], color: ['brown', 'black', 'white'], height: ['3 ft', '4 ft', '5 ft', '6 ft'] }, price: [460, 540] },
  { name: 'Desk Organizer', options: { color: ['black', 'white', 'wood'], compartments: ['3', '5', '7'] }, price: [25, 70] },
  { name: 'Smart Thermostat', options: { compatibility: ['Apple HomeKit', 'Google Assistant', 'Amazon Alexa'], color: ['black', 'white', 'stainless steel'] }, price: [230, 270] },
  { name: 'Wall Clock', options: { diameter: ['10 inches', '12 inches', '14 inches'], color: ['black', 'white', 'wood'], type: ['analog', 'digital'] }, price: [150, 300] },
  { name: 'Fitness Tracker', options: { color: ['black', 'blue', 'pink'], battery_life: ['5 days', '7 days', '14 days'], display: ['OLED', 'LCD'] }, price: [180, 240] },
  { name: 'Cutlery Set', options: { material: ['stainless steel', 'silver', 'wood'], piece_count: ['24 pieces', '32 pieces', '48 pieces'] }, price: [40, 110] },
  { name: 'Patio Umbrella', options: { size: ['6 ft', '7 ft', '9 ft'], color: ['red', 'navy', 'green', 'beige'], tilt_mechanism: ['auto tilt', 'manual tilt'] }, price: [250, 310] },
];

export const FIRST_NAMES: readonly string[] = [
  'Ava', 'Liam', 'Noah', 'Emma', 'Olivia', 'Mia', 'Ethan', 'Lucas', 'Sofia', 'Yusuf', 'Mei', 'Chen', 'Aarav', 'Isabella',
  'Harper', 'Mason', 'Amelia', 'James', 'Evelyn', 'Omar', 'Fatima', 'Raj', 'Priya', 'Daiki', 'Yara', 'Lei', 'Anya',
  'Mateo', 'Ivan', 'Juan', 'Sophia', 'Aiden', 'Lily', 'Emma', 'Mohamed', 'Isabelle', 'Harper', 'Sara', 'Noah', 'Ella',
  'Grace', 'Henry', 'Jack', 'Zoe', 'Leo', 'Nora', 'Elena', 'Kai', 'Hana', 'Arjun',
].filter((n, i, all) => all.indexOf(n) === i);

export const LAST_NAMES: readonly string[] = [
  'Rossi', 'Kovacs', 'Garcia', 'Lopez', 'Smith', 'Johnson', 'Nguyen', 'Patel', 'Kim', 'Silva', 'Muller', 'Ito', 'Khan',
  'Santos', 'Brown', 'Wilson', 'Taylor', 'Anderson', 'Thomas', 'Moore', 'Martin', 'Jackson', 'Lee', 'Gonzalez', 'Ahmed',
  'Hernandez', 'Davis', 'Lopez', 'Wright', 'Hughes', 'Sanchez', 'Ali', 'Jensen', 'Moreau', 'Costa', 'Novak', 'Sato',
  'Schmidt', 'Ivanov', 'Dubois',
].filter((n, i, all) => all.indexOf(n) === i);

export interface Place {
  city: string;
  state: string;
  zipPrefix: string;
}

export const PLACES: readonly Place[] = [
  { city: 'Houston', state: 'TX', zipPrefix: '77' },
  { city: 'Austin', state: 'TX', zipPrefix: '78' },
  { city: 'Denver', state: 'CO', zipPrefix: '80' },
  { city: 'Chicago', state: 'IL', zipPrefix: '60' },
  { city: 'Seattle', state: 'WA', zipPrefix: '98' },
  { city: 'Portland', state: 'OR', zipPrefix: '97' },
  { city: 'Phoenix', state: 'AZ', zipPrefix: '85' },
  { city: 'San Diego', state: 'CA', zipPrefix: '92' },
  { city: 'San Francisco', state: 'CA', zipPrefix: '94' },
  { city: 'Los Angeles', state: 'CA', zipPrefix: '90' },
  { city: 'New York', state: 'NY', zipPrefix: '10' },
  { city: 'Philadelphia', state: 'PA', zipPrefix: '19' },
  { city: 'Charlotte', state: 'NC', zipPrefix: '28' },
  { city: 'Jacksonville', state: 'FL', zipPrefix: '32' },
  { city: 'Columbus', state: 'OH', zipPrefix: '43' },
  { city: 'Indianapolis', state: 'IN', zipPrefix: '46' },
  { city: 'Fort Worth', state: 'TX', zipPrefix: '76' },
  { city: 'Boston', state: 'MA', zipPrefix: '02' },
  { city: 'Nashville', state: 'TN', zipPrefix: '37' },
  { city: 'Minneapolis', state: 'MN', zipPrefix: '55' },
];

export const STREET_NAMES: readonly string[] = [
  'Main Street', 'Oak Street', 'Pine Lane', 'Maple Drive', 'Cedar Avenue', 'Elm Street', 'Hillcrest Drive', 'Lakeview Drive',
  'Sunset Drive', 'Park Avenue', 'River Road', 'Highland Avenue', 'Willow Lane', 'Broadway', 'Chestnut Street', 'Spruce Street',
  'Laurel Lane', 'Jackson Street', 'Washington Avenue', 'Lincoln Avenue',
];

export const CARD_BRANDS: readonly string[] = ['visa', 'mastercard'];
